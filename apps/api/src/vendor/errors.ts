// The vendor API's error registry: every code this folder can answer with, and its HTTP status.
// The body is always `{"code","message"}` at the top level, with `x-ms-error-code: <code>`,
// because that is what the vendor's clients parse (BEHAVIOUR.md §5).

/**
 * Code -> HTTP status. The first block is the vendor's own `AnomalyDetectorErrorCodes` enum
 * (v1.1; open, `modelAsString`). The second block are codes we add for failures the vendor's
 * gateway answered outside its enum; the clients accept any string there.
 */
export const VENDOR_ERROR_STATUS = {
  BadArgument: 400,
  InvalidJsonFormat: 400,
  InvalidSeries: 400,
  InvalidGranularity: 400,
  InvalidCustomInterval: 400,
  InvalidPeriod: 400,
  InvalidModelArgument: 400,
  InvalidImputeMode: 400,
  InvalidImputeFixedValue: 400,

  NotFound: 404,
  MethodNotAllowed: 405,
  RequestTimeout: 408,
  PayloadTooLarge: 413,
  UnsupportedMediaType: 415,
  RequestHeaderFieldsTooLarge: 431,
  InternalServerError: 500,
} as const;

export type VendorErrorCode = keyof typeof VENDOR_ERROR_STATUS;

/** The one error class of the vendor routes; the scoped error handler turns it into the wire shape. */
export class VendorError extends Error {
  readonly code: VendorErrorCode;
  readonly statusCode: number;

  constructor(code: VendorErrorCode, message: string) {
    super(message);
    this.name = 'VendorError';
    this.code = code;
    this.statusCode = VENDOR_ERROR_STATUS[code];
  }
}

/** The wire body of every vendor error. */
export interface VendorErrorBody {
  readonly code: string;
  readonly message: string;
}

/** Shown for any failure we did not foresee; the details go to the log, never to the client. */
export const INTERNAL_ERROR_MESSAGE =
  'The series could not be processed because of an unexpected server error. Retry later; if it persists, contact the service operator.';
