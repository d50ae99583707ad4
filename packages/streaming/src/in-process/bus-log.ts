// The files behind the durable in-process bus (openDurableInProcessBus): an append-only log per
// topic partition and a committed-offsets file per consumer group, under one directory
// (`<DATA_DIR>/bus` for `npm start`).
//
//   topics/<topic>/topic.json               {"version":1,"name":...,"partitions":N}
//   topics/<topic>/<partition>/<base>.log   segments; <base> is the offset of the first record, 20 digits
//   groups/<group>.json                     {"version":1,"group":...,"offsets":{"<topic>":{"<partition>":<next offset>}}}
//
// A record's framing is in ./bus-log-records.ts. An append is written and fdatasync'd before its
// messages become visible to consumers and before the producer's send() resolves; appends that
// arrive while one is being synced share the next write (group commit). A crash can leave a torn
// last record (short, or a checksum that does not match): reopening truncates the last segment to
// its last whole record, which was never acknowledged. Damage anywhere else refuses to open
// (BUS_LOG_CORRUPT) rather than skip acknowledged messages.
//
// Offsets files are replaced atomically (write a temporary file, fsync, rename, fsync the
// directory). Disk use is bounded by compaction: segments wholly below what every group has
// committed (or what retention dropped) are deleted, and the active segment is rolled once it is
// `segmentBytes` long, or `compactBytes` long with everything in it committed.
import { mkdir, open, readdir, readFile, rename, rm, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { IncomingMessage, OutgoingMessage } from '../ports.js';
import { StreamingError } from '../errors.js';
import { decodeRecords, encodeRecord } from './bus-log-records.js';

const SEGMENT_SUFFIX = '.log';
const OFFSET_DIGITS = 20;

export interface BusLogOptions {
  /** Roll the active segment once it holds this many bytes. Default 8 MiB. */
  readonly segmentBytes?: number;
  /** Roll an active segment whose every message is committed once it holds this many bytes. Default 1 MiB. */
  readonly compactBytes?: number;
  /** Told about what the log repaired or could not tidy (a torn tail truncated, a segment not deleted). */
  readonly onWarning?: (message: string, detail: Record<string, unknown>) => void;
}

/** A partition as found on disk: its first retained offset and every retained message. */
export interface RestoredPartition {
  readonly base: number;
  readonly messages: IncomingMessage[];
}

export interface RestoredTopic {
  readonly name: string;
  readonly partitions: RestoredPartition[];
}

export interface RestoredGroup {
  readonly id: string;
  /** topic -> partition -> the next offset to deliver. */
  readonly offsets: ReadonlyMap<string, ReadonlyMap<number, number>>;
}

/** What the in-process bus asks of its files. */
export interface BusLog {
  readonly topics: readonly RestoredTopic[];
  readonly groups: readonly RestoredGroup[];
  /** Records a new topic (before it is used). */
  createTopic(name: string, partitions: number): Promise<void>;
  /**
   * Writes and syncs `messages` at the end of the partition, then calls `visible` with them (their
   * offsets assigned), synchronously and in offset order, and resolves. Rejects without calling
   * `visible` when the write fails; nothing of it is then left in the log.
   */
  append(
    topic: string,
    partition: number,
    messages: readonly OutgoingMessage[],
    timestampMs: number,
    visible: (messages: IncomingMessage[]) => void,
  ): Promise<void>;
  /** Durably records that `groupId` has consumed `topic`/`partition` up to (not including) `offset`. */
  commit(groupId: string, topic: string, partition: number, offset: number): Promise<void>;
  /** Lets the partition drop segments below `base` (in the background; failures are warnings). */
  compact(topic: string, partition: number, base: number): void;
  /** Waits for writes in progress and closes the files. */
  close(): Promise<void>;
}

function ioError(what: string, cause: unknown, context: { topic?: string; partition?: number } = {}): StreamingError {
  const detail = cause instanceof Error ? `: ${cause.message}` : '';
  return new StreamingError('BUS_LOG_UNAVAILABLE', `${what}${detail}`, context, { cause });
}

function corrupt(what: string, context: { topic?: string; partition?: number } = {}): StreamingError {
  return new StreamingError('BUS_LOG_CORRUPT', what, context);
}

/** A file name for any topic or group name: reversible, without separators or dot-only names. */
function fileName(name: string): string {
  return encodeURIComponent(name).replace(/\./g, '%2E').replace(/\*/g, '%2A');
}

function segmentName(base: number): string {
  return `${String(base).padStart(OFFSET_DIGITS, '0')}${SEGMENT_SUFFIX}`;
}

async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Replaces `file` with `contents` so that a crash leaves the old or the new file, never a mix. */
async function writeFileAtomically(file: string, contents: string): Promise<void> {
  const temporary = `${file}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(contents, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, file);
  await syncDirectory(path.dirname(file));
}

async function readJson(file: string): Promise<unknown> {
  return JSON.parse(await readFile(file, 'utf8')) as unknown;
}

interface Segment {
  readonly base: number;
  readonly file: string;
}

interface PendingAppend {
  readonly messages: readonly OutgoingMessage[];
  readonly timestampMs: number;
  readonly visible: (messages: IncomingMessage[]) => void;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/** One partition's segments; every file operation runs in turn (`serial`). */
class PartitionFiles {
  private active: FileHandle | null = null;
  private activeSize = 0;
  private pending: PendingAppend[] = [];
  private flushing = false;
  private broken: StreamingError | null = null;
  private closed = false;
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly topic: string,
    private readonly partition: number,
    private readonly dir: string,
    private readonly segments: Segment[],
    private nextOffset: number,
    activeSize: number,
    private readonly options: Required<Omit<BusLogOptions, 'onWarning'>> & Pick<BusLogOptions, 'onWarning'>,
  ) {
    this.activeSize = activeSize;
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const next = this.queue.then(task);
    this.queue = next.then(
      () => undefined,
      () => undefined,
    );
    return next;
  }

  append(pending: PendingAppend): void {
    this.pending.push(pending);
    if (!this.flushing) void this.flush();
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0) {
        const round = this.pending.splice(0);
        await this.serial(() => this.write(round));
      }
    } finally {
      this.flushing = false;
    }
  }

  private async write(round: PendingAppend[]): Promise<void> {
    const context = { topic: this.topic, partition: this.partition };
    if (this.broken) {
      for (const request of round) request.reject(this.broken);
      return;
    }
    let offset = this.nextOffset;
    const chunks: Buffer[] = [];
    const visible: IncomingMessage[][] = [];
    for (const request of round) {
      const messages: IncomingMessage[] = [];
      for (const message of request.messages) {
        const key = message.key === null ? null : Buffer.from(message.key, 'utf8');
        const headers = { ...message.headers };
        chunks.push(encodeRecord({ offset, timestampMs: request.timestampMs, key, headers, value: message.value }));
        messages.push({
          topic: this.topic,
          partition: this.partition,
          offset: String(offset),
          key,
          value: message.value,
          headers,
          timestampMs: request.timestampMs,
        });
        offset++;
      }
      visible.push(messages);
    }
    const data = Buffer.concat(chunks);
    try {
      if (this.active === null) {
        // After a restart: go on in the last segment while it has room.
        const last = this.segments[this.segments.length - 1];
        if (last && this.activeSize < this.options.segmentBytes) this.active = await open(last.file, 'r+');
      }
      if (this.active === null || this.activeSize >= this.options.segmentBytes) await this.roll();
    } catch (cause) {
      const error = ioError(`opening a segment of ${this.topic}/${this.partition}`, cause, context);
      for (const request of round) request.reject(error);
      return;
    }
    const startSize = this.activeSize;
    try {
      const handle = this.active!;
      let written = 0;
      while (written < data.length) {
        const { bytesWritten } = await handle.write(data, written, data.length - written, this.activeSize + written);
        written += bytesWritten;
      }
      await handle.datasync();
    } catch (cause) {
      const error = ioError(`appending to ${this.topic}/${this.partition}`, cause, context);
      // Take back what may have been written, so the next append does not follow a torn record;
      // if that fails too, this partition refuses appends until the bus is reopened.
      try {
        await this.active?.truncate(startSize);
        await this.active?.datasync();
      } catch {
        this.broken = error;
      }
      for (const request of round) request.reject(error);
      return;
    }
    this.activeSize += data.length;
    this.nextOffset = offset;
    round.forEach((request, index) => {
      request.visible(visible[index]!);
      request.resolve();
    });
  }

  /** Starts a new active segment at the next offset (unless the active one is still empty). */
  private async roll(): Promise<void> {
    if (this.active !== null && this.activeSize === 0) return;
    const last = this.segments[this.segments.length - 1];
    if (last && last.base === this.nextOffset) {
      // Reopening the (empty) last segment.
      this.active ??= await open(last.file, 'r+');
      return;
    }
    const file = path.join(this.dir, segmentName(this.nextOffset));
    const handle = await open(file, 'w', 0o600);
    try {
      await handle.sync();
      await syncDirectory(this.dir);
    } catch (cause) {
      await handle.close().catch(() => undefined);
      throw cause;
    }
    await this.active?.close().catch(() => undefined);
    this.active = handle;
    this.activeSize = 0;
    this.segments.push({ base: this.nextOffset, file });
  }

  compact(base: number): void {
    if (this.closed) return;
    void this.serial(async () => {
      if (this.broken || this.closed) return;
      if (base >= this.nextOffset && this.activeSize >= this.options.compactBytes) await this.roll();
      let deleted = 0;
      // Never the last (active) segment: it names the next offset.
      while (this.segments.length > 1 && this.segments[1]!.base <= base) {
        const segment = this.segments.shift()!;
        await unlink(segment.file).catch((cause: unknown) => {
          if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw cause;
        });
        deleted++;
      }
      if (deleted > 0) await syncDirectory(this.dir);
    }).catch((cause: unknown) => {
      this.options.onWarning?.('could not delete committed log segments; they are retried on the next commit', {
        topic: this.topic,
        partition: this.partition,
        error: cause instanceof Error ? cause.message : String(cause),
      });
    });
  }

  async close(): Promise<void> {
    while (this.flushing || this.pending.length > 0) await this.queue;
    this.closed = true;
    await this.queue;
    await this.active?.close().catch(() => undefined);
    this.active = null;
  }
}

/** One group's committed offsets; writes are coalesced, each caller waiting for one that includes its value. */
class GroupOffsets {
  private requested = 0;
  private written = 0;
  private writing: Promise<void> | null = null;
  private waiters: { version: number; resolve: () => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly id: string,
    private readonly file: string,
    readonly offsets: Map<string, Map<number, number>>,
  ) {}

  commit(topic: string, partition: number, offset: number): Promise<void> {
    let partitions = this.offsets.get(topic);
    if (!partitions) this.offsets.set(topic, (partitions = new Map()));
    partitions.set(partition, offset);
    const version = ++this.requested;
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ version, resolve, reject }));
    this.writing ??= this.writeLoop();
    return done;
  }

  private async writeLoop(): Promise<void> {
    try {
      while (this.written < this.requested) {
        const version = this.requested;
        const snapshot: Record<string, Record<string, number>> = {};
        for (const [topic, partitions] of this.offsets) snapshot[topic] = Object.fromEntries(partitions);
        let failure: unknown = null;
        try {
          await writeFileAtomically(this.file, JSON.stringify({ version: 1, group: this.id, offsets: snapshot }));
        } catch (cause) {
          failure = ioError(`recording the offsets of group ${this.id}`, cause);
        }
        const settled = this.waiters.filter((waiter) => waiter.version <= version);
        this.waiters = this.waiters.filter((waiter) => waiter.version > version);
        this.written = version;
        for (const waiter of settled) {
          if (failure === null) waiter.resolve();
          else waiter.reject(failure);
        }
      }
    } finally {
      this.writing = null;
    }
  }

  async close(): Promise<void> {
    await this.writing;
  }
}

async function listDirectory(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw cause;
  }
}

/** Reads one partition's segments (repairing a torn tail) into its retained messages. */
async function restorePartition(
  topic: string,
  partition: number,
  dir: string,
  options: BusLogOptions,
): Promise<{ restored: RestoredPartition; segments: Segment[]; nextOffset: number; activeSize: number }> {
  const context = { topic, partition };
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const names = await listDirectory(dir);
  const segments: Segment[] = [];
  for (const name of names) {
    const match = /^(\d{20})\.log$/.exec(name);
    if (match) segments.push({ base: Number(match[1]), file: path.join(dir, name) });
  }
  segments.sort((a, b) => a.base - b.base);
  const messages: IncomingMessage[] = [];
  let nextOffset = segments[0]?.base ?? 0;
  let activeSize = 0;
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index]!;
    const isLast = index === segments.length - 1;
    if (segment.base !== nextOffset) {
      throw corrupt(`${segment.file} starts at offset ${segment.base}, but the segment before it ends at ${nextOffset}`, context);
    }
    const buffer = await readFile(segment.file);
    const decoded = decodeRecords(buffer);
    if (decoded.damage !== null) {
      if (!isLast) throw corrupt(`${segment.file} is damaged at byte ${decoded.validBytes} (${decoded.damage}), before its last segment`, context);
      // A torn tail: the write of an append that was never acknowledged. Cut it off.
      options.onWarning?.('truncated a torn record at the end of the bus log', {
        topic,
        partition,
        file: segment.file,
        atByte: decoded.validBytes,
        droppedBytes: buffer.length - decoded.validBytes,
        reason: decoded.damage,
      });
      const handle = await open(segment.file, 'r+');
      try {
        await handle.truncate(decoded.validBytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
    }
    for (const record of decoded.records) {
      if (record.offset !== nextOffset) {
        throw corrupt(`${segment.file} holds offset ${record.offset} where ${nextOffset} was expected`, context);
      }
      messages.push({
        topic,
        partition,
        offset: String(record.offset),
        key: record.key,
        value: record.value,
        headers: record.headers,
        timestampMs: record.timestampMs,
      });
      nextOffset++;
    }
    if (isLast) activeSize = decoded.validBytes;
  }
  return { restored: { base: segments[0]?.base ?? 0, messages }, segments, nextOffset, activeSize };
}

/** Opens (creating when absent) the bus files under `dir` and reads back what they hold. */
export async function openBusLog(dir: string, options: BusLogOptions = {}): Promise<BusLog> {
  const settings = {
    segmentBytes: options.segmentBytes ?? 8 * 1024 * 1024,
    compactBytes: options.compactBytes ?? 1024 * 1024,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  };
  const topicsDir = path.join(dir, 'topics');
  const groupsDir = path.join(dir, 'groups');
  const partitions = new Map<string, PartitionFiles[]>();
  const groups = new Map<string, GroupOffsets>();
  const restoredTopics: RestoredTopic[] = [];
  const restoredGroups: RestoredGroup[] = [];
  try {
    await mkdir(topicsDir, { recursive: true, mode: 0o700 });
    await mkdir(groupsDir, { recursive: true, mode: 0o700 });

    for (const entry of await listDirectory(topicsDir)) {
      const topicDir = path.join(topicsDir, entry);
      let meta: unknown;
      try {
        meta = await readJson(path.join(topicDir, 'topic.json'));
      } catch (cause) {
        if ((cause as NodeJS.ErrnoException).code !== 'ENOENT') throw corrupt(`${topicDir}/topic.json cannot be read`);
        // A topic whose creation did not finish: it was never used.
        await rm(topicDir, { recursive: true, force: true });
        continue;
      }
      const { name, partitions: count } = (meta ?? {}) as { name?: unknown; partitions?: unknown };
      if (typeof name !== 'string' || fileName(name) !== entry || !Number.isInteger(count) || (count as number) < 1) {
        throw corrupt(`${topicDir}/topic.json does not describe this topic`);
      }
      const files: PartitionFiles[] = [];
      const restored: RestoredPartition[] = [];
      for (let partition = 0; partition < (count as number); partition++) {
        const partitionDir = path.join(topicDir, String(partition));
        const read = await restorePartition(name, partition, partitionDir, settings);
        restored.push(read.restored);
        files.push(new PartitionFiles(name, partition, partitionDir, read.segments, read.nextOffset, read.activeSize, settings));
      }
      partitions.set(name, files);
      restoredTopics.push({ name, partitions: restored });
    }

    for (const entry of await listDirectory(groupsDir)) {
      const file = path.join(groupsDir, entry);
      if (entry.endsWith('.tmp')) {
        await rm(file, { force: true });
        continue;
      }
      if (!entry.endsWith('.json')) continue;
      const parsed = (await readJson(file).catch(() => {
        throw corrupt(`${file} cannot be read`);
      })) as { group?: unknown; offsets?: unknown };
      if (typeof parsed?.group !== 'string' || typeof parsed.offsets !== 'object' || parsed.offsets === null) {
        throw corrupt(`${file} does not describe a consumer group`);
      }
      const offsets = new Map<string, Map<number, number>>();
      for (const [topic, byPartition] of Object.entries(parsed.offsets as Record<string, Record<string, unknown>>)) {
        const map = new Map<number, number>();
        for (const [partition, offset] of Object.entries(byPartition ?? {})) {
          if (Number.isSafeInteger(offset) && (offset as number) >= 0) map.set(Number(partition), offset as number);
        }
        offsets.set(topic, map);
      }
      groups.set(parsed.group, new GroupOffsets(parsed.group, file, offsets));
      restoredGroups.push({ id: parsed.group, offsets });
    }
  } catch (cause) {
    await Promise.all([...partitions.values()].flat().map((files) => files.close()));
    if (cause instanceof StreamingError) throw cause;
    throw ioError(`opening the bus log under ${dir}`, cause);
  }

  const filesOf = (topic: string, partition: number): PartitionFiles => {
    const files = partitions.get(topic)?.[partition];
    if (!files) throw new StreamingError('TOPIC_UNKNOWN', `the bus log has no ${topic}/${partition}`, { topic, partition });
    return files;
  };

  return {
    topics: restoredTopics,
    groups: restoredGroups,

    async createTopic(name: string, count: number): Promise<void> {
      if (partitions.has(name)) return;
      const topicDir = path.join(topicsDir, fileName(name));
      try {
        await mkdir(topicDir, { recursive: true, mode: 0o700 });
        const files: PartitionFiles[] = [];
        for (let partition = 0; partition < count; partition++) {
          const partitionDir = path.join(topicDir, String(partition));
          await mkdir(partitionDir, { recursive: true, mode: 0o700 });
          files.push(new PartitionFiles(name, partition, partitionDir, [], 0, 0, settings));
        }
        await syncDirectory(topicDir);
        await syncDirectory(topicsDir);
        // Last: a topic directory without its topic.json is an unfinished creation.
        await writeFileAtomically(path.join(topicDir, 'topic.json'), JSON.stringify({ version: 1, name, partitions: count }));
        partitions.set(name, files);
      } catch (cause) {
        throw ioError(`creating topic ${name}`, cause, { topic: name });
      }
    },

    append(topic, partition, messages, timestampMs, visible): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        filesOf(topic, partition).append({ messages, timestampMs, visible, resolve, reject });
      });
    },

    commit(groupId, topic, partition, offset): Promise<void> {
      let group = groups.get(groupId);
      if (!group) {
        group = new GroupOffsets(groupId, path.join(groupsDir, `${fileName(groupId)}.json`), new Map());
        groups.set(groupId, group);
      }
      return group.commit(topic, partition, offset);
    },

    compact(topic, partition, base): void {
      partitions.get(topic)?.[partition]?.compact(base);
    },

    async close(): Promise<void> {
      await Promise.all([...partitions.values()].flat().map((files) => files.close()));
      await Promise.all([...groups.values()].map((group) => group.close()));
    },
  };
}
