// The seams of the streaming platform. Each one has an embedded implementation (one process, no
// server: `npm start`) and a scale-out one (Kafka, ClickHouse, Redis), chosen by configuration;
// the API, the workers and the integration tests only see these interfaces.
import type { REGIMES } from './avro/schemas.js';

/** A message as producers hand it to the bus. */
export interface OutgoingMessage {
  /** Partitioning key: '<organization>/<machine_id>' for telemetry, so a machine's points stay ordered. */
  readonly key: string | null;
  /** The encoded payload (Avro single-object encoding for telemetry, results and dead letters). */
  readonly value: Buffer;
  /** String headers (trace context travels here as `traceparent` / `tracestate`). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A message as consumers receive it, with its position. */
export interface IncomingMessage {
  readonly topic: string;
  readonly partition: number;
  /** The offset as a decimal string (Kafka offsets exceed 2^53 in theory). */
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  /** Broker or bus append time, epoch milliseconds (for end-to-end lag). */
  readonly timestampMs: number;
}

/** The messages of one partition handed to a consumer at once. */
export interface IncomingBatch {
  readonly topic: string;
  readonly partition: number;
  readonly messages: readonly IncomingMessage[];
}

export interface BusProducer {
  /** Resolves once the bus has accepted every message (Kafka: acks from all in-sync replicas). */
  send(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  /**
   * Bytes of message values one send may carry at most, where the bus has such a limit (Kafka:
   * a send's messages to one partition are one record batch, refused past the broker's
   * message.max.bytes). Absent: any size, and one send is cheaper than several (the durable
   * in-process bus writes and syncs each send's messages at once).
   */
  readonly maxSendBytes?: number;
  close(): Promise<void>;
}

export interface BusConsumerOptions {
  /** Consumer group: replicas of one group share the partitions. */
  readonly groupId: string;
  readonly topics: readonly string[];
}

export interface BusConsumer {
  /**
   * Starts consuming. `handler` gets each partition's batch; the batch's offsets are committed only
   * after the promise resolves. A rejected promise does not commit: the batch is delivered again
   * (to this replica or, after a rebalance, another). Resolves once consumption has started.
   */
  run(handler: (batch: IncomingBatch) => Promise<void>): Promise<void>;
  /** Stops fetching, lets the running handler finish, commits what it finished, leaves the group. */
  close(): Promise<void>;
}

export interface Bus {
  producer(): Promise<BusProducer>;
  consumer(options: BusConsumerOptions): Promise<BusConsumer>;
  /** Creates the topics if missing (topic auto-creation is off on our brokers). */
  ensureTopics(topics: readonly { readonly name: string; readonly partitions: number }[]): Promise<void>;
  /**
   * Resolves when the bus's server answers (readiness probes); rejects with a retriable
   * StreamingError when not. In-process pieces have no server and always resolve; optional so
   * that test doubles need not implement it.
   */
  ping?(): Promise<void>;

  close(): Promise<void>;
}

/** The engine's verdict on one point, as every result table stores it (streamed results and detection jobs). */
export interface JudgedPoint {
  readonly value: number;
  readonly expectedValue: number;
  readonly upperMargin: number;
  readonly lowerMargin: number;
  readonly isAnomaly: boolean;
  readonly isPositiveAnomaly: boolean;
  readonly isNegativeAnomaly: boolean;
  readonly severity: number;
}

/** One stored per-point judgement: the columns of schemas/clickhouse/0001_results.sql. */
export interface ResultRow extends JudgedPoint {
  readonly orgId: string;
  readonly machineId: string;
  readonly tsMs: number;
  readonly energy: number | null;
  readonly zScore: number | null;
  readonly regime: (typeof REGIMES)[number];
  readonly modelVersion: string;
  readonly writtenAtMs: number;
}

export interface ResultQuery {
  readonly orgId: string;
  readonly machineId: string;
  /** Inclusive lower bound on tsMs. */
  readonly fromMs?: number;
  /** Exclusive upper bound on tsMs. */
  readonly toMs?: number;
  /** Rows after this timestamp only (the paging cursor: the last row's tsMs). */
  readonly afterTsMs?: number;
  /** At most this many rows, ascending by tsMs. */
  readonly limit: number;
}

/** Per-machine aggregates of stored results (GET /v1/machines and /v1/status in scale-out mode). */
export interface StoredMachineSummary {
  readonly machineId: string;
  readonly points: number;
  readonly anomalies: number;
  readonly firstTsMs: number;
  readonly lastTsMs: number;
  readonly regimeCounts: Readonly<Record<ResultRow['regime'], number>>;
}

export interface ResultStore {
  /** Inserts one batch; resolves only when the store has it durably. Replayed rows must not duplicate query results. */
  insert(rows: readonly ResultRow[]): Promise<void>;
  /** Each point once (the latest write wins), ascending by tsMs. */
  query(query: ResultQuery): Promise<ResultRow[]>;
  machines(orgId: string): Promise<StoredMachineSummary[]>;
  /** Resolves when the store's server answers (see `Bus.ping`). */
  ping?(): Promise<void>;

  /**
   * Removes the rows of series `machineId` and, unless that id holds ':', of its channels
   * (`<machineId>:<channel>`; series-ids.ts). Resolves with whether there were any, once reads no
   * longer see them (ClickHouse: once the mutation is done, or after a bounded wait for it).
   */
  deleteMachine(orgId: string, machineId: string): Promise<boolean>;
  /** Removes every row whose point is older than `beforeMs` (retention); may finish in the background. */
  deleteBefore(beforeMs: number): Promise<void>;
  close(): Promise<void>;
}

/** Per-machine worker state (trailing windows), so a restarted or rebalanced worker resumes with context. */
export interface CheckpointStore {
  load(keys: readonly string[]): Promise<Map<string, Buffer>>;
  save(entries: ReadonlyMap<string, Buffer>): Promise<void>;
  /** Resolves when the store's server answers (see `Bus.ping`). */
  ping?(): Promise<void>;

  /**
   * Removes every consumer group's checkpoints of the machine's series (keys
   * `<group>/<orgId>/<series>`, series-ids.ts isCheckpointOfMachine). Resolves with how many.
   */
  deleteMachine(orgId: string, machineId: string): Promise<number>;
  close(): Promise<void>;
}

/** Fan-out notifications between replicas (baseline created/updated/deleted -> drop cached models). */
export interface Notifier {
  publish(channel: string, message: string): Promise<void>;
  /** Returns the unsubscribe function. */
  subscribe(channel: string, listener: (message: string) => void): Promise<() => Promise<void>>;
  /** Resolves when the notifier's server answers (see `Bus.ping`). */
  ping?(): Promise<void>;

  close(): Promise<void>;
}

/** One dependency a readiness probe asks: its name (in the probe's answer) and how to ask it. */
export interface DependencyCheck {
  /** Names the dependency, never its address or credentials: `kafka`, `clickhouse results`, `redis`. */
  readonly name: string;
  /** Resolves when the dependency answers; rejects (preferably with a coded error) when not. */
  ping(): Promise<void>;
}

/** Channel name for baseline changes; the message is JSON `{ "orgId": ..., "machineId": ... }`. */
/**
 * Channel name for baseline changes; the message is JSON `{ "orgId": ..., "machineId": ... }`,
 * with `"deleted": true` when the machine was deleted (the workers then drop its series' windows
 * too, channels included).
 */
export const BASELINE_CHANGED_CHANNEL = 'adp:baseline-changed';

/** Channel on which the API announces a machine's feedback changed; the message is JSON `{ "orgId", "machineId" }`. */
export const FEEDBACK_CHANGED_CHANNEL = 'adp:feedback-changed';

/** Topic names. */
export const TOPICS = {
  telemetry: 'adp.telemetry.v1',
  deadLetter: 'adp.telemetry.dead-letter.v1',
  /** Detection jobs' series in chunks (JobChunk), keyed '<organization>/<job_id>/<series_index>'. */
  jobs: 'adp.jobs.v1',
  /** Episodes opened and closed (Alert records), keyed '<organization>/<machine_id>'. */
  alerts: 'adp.alerts.v1',
} as const;
