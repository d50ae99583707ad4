// Typed failures of the streaming schemas and migrations. Every code says whether retrying can
// help: decode failures are poison (the message goes to the dead-letter topic, never retried),
// an unreachable ClickHouse is not.

export const STREAMING_ERROR_CODES = {
  /** An `.avsc` file is missing, not JSON, or not a valid Avro schema. A deployment bug. */
  SCHEMA_INVALID: { retriable: false },
  /** A registered writer schema cannot be resolved into the reader schema (incompatible evolution). */
  SCHEMA_INCOMPATIBLE: { retriable: false },
  /** Not Avro single-object encoding: shorter than the 10-byte header or without the C3 01 marker. */
  MESSAGE_NOT_SINGLE_OBJECT: { retriable: false },
  /** The message's writer-schema fingerprint is not in the registry. */
  UNKNOWN_SCHEMA_FINGERPRINT: { retriable: false },
  /** The body does not decode with the writer schema: truncated, trailing bytes, bad lengths or indices. */
  MESSAGE_BODY_CORRUPT: { retriable: false },
  /** A value handed to `encode` does not match the schema. A bug in the caller. */
  MESSAGE_INVALID: { retriable: false },
  /** A name meant for SQL is not a plain identifier. Never interpolated. */
  INVALID_IDENTIFIER: { retriable: false },
  /** A migration file is malformed, or an applied migration's SQL was edited after it ran. */
  MIGRATION_INVALID: { retriable: false },
  /** ClickHouse rejected a migration statement (the server's code is in `serverCode`). */
  MIGRATION_FAILED: { retriable: false },
  /** ClickHouse could not be reached or timed out while migrating. */
  CLICKHOUSE_UNAVAILABLE: { retriable: true },
  /** ClickHouse answered an insert or query with an error (the server's code is in `serverCode`). */
  CLICKHOUSE_QUERY_FAILED: { retriable: false },
  /** A message was sent to a topic the bus does not have (auto-creation is off: `ensureTopics` first). */
  TOPIC_UNKNOWN: { retriable: false },
  /** The bus, producer, consumer or store was used after `close()`. */
  STREAMING_CLOSED: { retriable: false },
  /** Kafka could not be reached, or a produce/commit failed in a way a retry can fix. */
  KAFKA_UNAVAILABLE: { retriable: true },
  /** The durable in-process bus could not write or read its log files under DATA_DIR (disk full, I/O error). */
  BUS_LOG_UNAVAILABLE: { retriable: true },
  /** The durable in-process bus found damage in its log before the last record (not a torn tail): it will not skip acknowledged messages. */
  BUS_LOG_CORRUPT: { retriable: false },
  /** The durable in-process bus holds as much unconsumed telemetry for a partition as it may: retry once the worker has caught up. */
  BUS_FULL: { retriable: true },
  /** Redis could not be reached or a command failed. */
  REDIS_UNAVAILABLE: { retriable: true },
  /** The embedded (DuckDB) result store could not be opened, written or read. */
  EMBEDDED_STORE_UNAVAILABLE: { retriable: true },
  /** A value headed for SQL or a store (result row, checkpoint key) is out of range or malformed. */
  VALUE_INVALID: { retriable: false },
} as const;

export type StreamingErrorCode = keyof typeof STREAMING_ERROR_CODES;

/** What a failure was about: the schema, the message's fingerprint, the migration, the server code. */
export interface StreamingErrorContext {
  readonly schema?: string;
  /** Writer-schema fingerprint, 16 hex digits (the 8 bytes as they appear in the message). */
  readonly fingerprint?: string;
  /** Field path of an invalid value, e.g. `channels.0.value`. */
  readonly path?: string;
  readonly migration?: string;
  readonly database?: string;
  /** ClickHouse's numeric error code, when the server answered with one. */
  readonly serverCode?: string;
  readonly topic?: string;
  /** Kafka consumer group. */
  readonly groupId?: string;
  readonly partition?: number;
  /** Kafka offset, decimal string. */
  readonly offset?: string;
  /** ClickHouse query id of a failed insert or query. */
  readonly queryId?: string;
}

export class StreamingError extends Error {
  override readonly name = 'StreamingError';
  readonly code: StreamingErrorCode;
  readonly retriable: boolean;
  readonly context: StreamingErrorContext;

  constructor(
    code: StreamingErrorCode,
    message: string,
    context: StreamingErrorContext = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.code = code;
    this.retriable = STREAMING_ERROR_CODES[code].retriable;
    this.context = context;
  }
}

export function isStreamingError(value: unknown): value is StreamingError {
  return value instanceof StreamingError;
}
