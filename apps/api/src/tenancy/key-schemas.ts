// Wire schemas of key management, shared by /v1/keys and the admin API's key routes.
import { Type } from 'typebox';

export const KEY_NAME_MAX_LENGTH = 200;
/** Longest grace period of a rotation: 30 days. */
export const MAX_GRACE_SECONDS = 30 * 24 * 3600;
/** Grace period of a rotation that does not say: one hour. */
export const DEFAULT_GRACE_SECONDS = 3600;

export const ErrorBody = Type.Object(
  { error: Type.Object({ code: Type.String(), message: Type.String() }) },
  { description: 'A coded error: `error.code` is stable.' },
);

const Timestamp = Type.String({ format: 'date-time' });
const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);
const KeyKind = Type.Union([Type.Literal('live'), Type.Literal('test')]);

export const KeyView = Type.Object({
  key_id: Type.String(),
  kind: KeyKind,
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the key, to recognise it.' }),
  created_at: Timestamp,
  last_used_at: Type.Union([Timestamp, Type.Null()], { description: 'Updated at most once a minute per key.' }),
  revoked_at: NullableTimestamp,
  expires_at: Type.Union([Timestamp, Type.Null()], { description: 'When a rotated key stops working; null when it does not expire.' }),
});

export const IssuedKey = Type.Object(
  {
    ...KeyView.properties,
    key: Type.String({ description: 'The key itself: shown this once, never again.' }),
    last4: Type.String({ description: 'Its last 4 characters.' }),
  },
  { description: 'A new key. Store `key` now: it cannot be shown again.' },
);

export const KeyList = Type.Object({ keys: Type.Array(KeyView) });

export const CreateKeyBody = Type.Object(
  {
    kind: KeyKind,
    name: Type.Optional(Type.String({ maxLength: KEY_NAME_MAX_LENGTH, description: 'A label. Default empty.' })),
  },
  { additionalProperties: false },
);

export const KeyIdParams = Type.Object({ key_id: Type.String({ maxLength: 128 }) });

export const RotateKeyBody = Type.Object(
  {
    grace_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_GRACE_SECONDS,
        description: `How long the old key keeps working, in seconds. Default ${DEFAULT_GRACE_SECONDS}; 0 revokes it at once.`,
      }),
    ),
  },
  { additionalProperties: false },
);

export const RotatedKey = Type.Object(
  { ...IssuedKey.properties, previous: KeyView },
  { description: 'The successor (shown once) and the old key with its expiry.' },
);
