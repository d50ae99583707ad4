// The identifier rules every side checks: the API's validators and schemas, the stream worker's
// decoder, the dashboard's form fields. Each rule is written once as a pattern body; the anchored
// RegExp, the JSON Schema `pattern` and the HTML `pattern` attribute are derived from it. The body
// escapes `-` in its classes, because browsers compile an HTML `pattern` with the `v` flag, under
// which an unescaped `-` at a class's end is a syntax error (and the field is then not checked).

/** Longest machine id, and longest series id (`<machine_id>:<channel>`). */
export const MACHINE_ID_MAX_LENGTH = 128;
/** Longest channel name. */
export const CHANNEL_NAME_MAX_LENGTH = 64;

/** The body of a machine id (also a series id): A-Z a-z 0-9 . _ : - starting with a letter or digit. */
export const MACHINE_ID_BODY = `[A-Za-z0-9][A-Za-z0-9._:\\-]{0,${MACHINE_ID_MAX_LENGTH - 1}}`;
/** Machine ids (and series ids, `<machine_id>:<channel>`) as the native API accepts them. */
export const MACHINE_ID_PATTERN = anchored(MACHINE_ID_BODY);
export const MACHINE_ID_RULE = `1 to ${MACHINE_ID_MAX_LENGTH} characters from A-Z a-z 0-9 . _ : - starting with a letter or digit`;

/**
 * The machine id of telemetry: a machine id without ':', which separates a machine from its
 * channel (otherwise machine `a`'s channel `b` and machine `a:b` would be one series).
 */
export const TELEMETRY_MACHINE_ID_PATTERN = anchored(`[A-Za-z0-9][A-Za-z0-9._\\-]{0,${MACHINE_ID_MAX_LENGTH - 1}}`);

/**
 * Channel names: a letter or _ first, then A-Z a-z 0-9 _ . : - . Never a digit first: JSON.parse
 * moves integer-like keys ("0", "7") to the front of an object, which would change the channel
 * order the model sees.
 */
export const CHANNEL_NAME_PATTERN = anchored(`[A-Za-z_][A-Za-z0-9_.:\\-]{0,${CHANNEL_NAME_MAX_LENGTH - 1}}`);
export const CHANNEL_NAME_RULE = `1 to ${CHANNEL_NAME_MAX_LENGTH} characters from A-Z a-z 0-9 _ . : - starting with a letter or underscore`;

function anchored(body: string): RegExp {
  return new RegExp(`^${body}$`);
}
