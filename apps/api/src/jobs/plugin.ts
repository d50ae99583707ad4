// The detection-job routes (docs/jobs.md): POST /v1/jobs accepts series of any length up to
// JOBS_MAX_POINTS, writes them to the jobs topic in JobChunk messages and answers 202 with the
// job's id; the job worker (@adp/stream-worker startJobWorker) judges each series whole and writes the
// results to the job store, which GET /v1/jobs/{id} and /results read.
//
// Acceptance: the body is validated in full first (coded 400s naming the series and point), then
// the per-organization caps are checked (429 with Retry-After), then the job is recorded
// (queued) and its chunks published; the 202 comes once the bus has them (embedded: fsync'd to
// the log under DATA_DIR/bus; Kafka: acknowledged by every in-sync replica). The record comes
// before the chunks so that a worker never meets a chunk of an unknown job. If publishing or
// metering fails, the job is removed again and the answer is a 503: the client's retry (with the
// same Idempotency-Key) makes the job anew, and a chunk already published finds no job and is
// skipped.
import { createHash } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyValidationResult } from 'fastify/types/schema.js';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { parseIsoTimestamp } from '@adp/detection';
import { decodeMachineModel } from '@adp/machine';
import type { BaselineRecord, Store } from '@adp/store';
import { TOPICS, loadStreamingCodecs, type Bus, type OutgoingMessage } from '@adp/streaming';
import { FINISHED_JOB_STATUSES, type JobRecord, type JobSeries, type JobStore } from '@adp/store';
import { lazyProducer } from '../bus-producer.js';
import type { JobsConfig } from '../config.js';
import { AppError, ERRORS } from '../errors.js';
import { lacksModelChannels } from '../native/multivariate.js';
import { NativeError } from '../native/schemas.js';
import { useSchemaValidation } from '../schema-validation.js';
import { Type } from 'typebox';
import { usageMeter, type HourlyCallCounting } from '../tenancy/metering.js';
import { episodeBody, jobBody, newJobId, rowBody } from './bodies.js';
import { csvJobBody } from './csv.js';
import { checkJobRequest, JOB_SCHEMA_ERRORS } from './check.js';
import { JobBodyPrescans, jobJsonParser, parseJobBody, ScannedJobBody } from './json-scan.js';
import { publishChunks } from './publish.js';
import {
  encodeResultsCursor,
  parseIdempotencyKey,
  parseJobId,
  parseJobResultsQuery,
  parseJobRequest,
  parseJobsQuery,
  seriesName,
  type ParsedJobRequest,
} from './request.js';
import {
  JobBody,
  JobDeleted,
  JobParams,
  JobCsvQuery,
  JobRequest,
  JobResultsQuery,
  JobResultsResponse,
  JobsQuery,
  JobsResponse,
} from './schemas.js';

/** Usage label of POST /v1/jobs (GET /v1/usage lists it): the job's points, counted when it is accepted. */
export const JOBS_ENDPOINT = 'jobs';

/** The limits and topic of JobsConfig (JOBS_* settings, documented there); the topic defaults to TOPICS.jobs. */
export interface JobRoutesOptions extends Omit<JobsConfig, 'topic'> {
  readonly store: Store;
  /** Where jobs are recorded and their results read; absent: every job route answers 503. */
  readonly jobs?: JobStore;
  /** Where the chunks go; absent: POST /v1/jobs answers 503. */
  readonly bus?: Pick<Bus, 'producer'>;
  readonly topic?: string;
  readonly hourlyCounting?: HourlyCallCounting;
  readonly nowMs?: () => number;
}

const TAGS = ['jobs'];

/** A series of the job before it is chunked: `width` values a point (a machine verdict's readings). */
interface PlannedSeries {
  readonly machineId: string | null;
  readonly channel?: string;
  readonly machine?: JobSeries['machine'];
  readonly timestampsMs: readonly number[] | null;
  readonly values: readonly number[];
  readonly width: number;
  readonly sensitivity: number | undefined;
}
const ERROR_RESPONSES = { 400: NativeError, 404: NativeError, 409: NativeError, 413: NativeError, 415: NativeError, 503: NativeError } as const;

function orgOf(request: FastifyRequest): string {
  const orgId = (request.auth as typeof request.auth | null)?.orgId;
  if (!orgId) throw new AppError(ERRORS.InternalError, 'Job route ran without an authenticated caller');
  return orgId;
}

export const jobRoutes: FastifyPluginAsync<JobRoutesOptions> = async (fastify, options) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { jobs, bus } = options;
  const nowMs = options.nowMs ?? Date.now;
  const usage = usageMeter(options.store, options.hourlyCounting);
  const codecs = loadStreamingCodecs();
  const topic = options.topic ?? TOPICS.jobs;
  // JSON bodies, queries and paths are validated against ./schemas.ts; a failure names its field.
  const compileValidator = useSchemaValidation(app, JOB_SCHEMA_ERRORS);
  // A series as a CSV file (./csv.ts); only these routes take it. Its own parser: the file is text
  // (up to JOBS_BODY_LIMIT_BYTES, a million points) that no JSON schema reads; it becomes the JSON body.
  app.addContentTypeParser('text/csv', { parseAs: 'string', bodyLimit: options.bodyLimitBytes }, (_request, body, done) => {
    done(null, body);
  });
  // JSON bodies of the usual shape have their series read without JSON.parse (./json-scan.ts),
  // POST /v1/jobs's while they upload.
  const prescans = new JobBodyPrescans(parseIsoTimestamp);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: options.bodyLimitBytes },
    jobJsonParser(app.getDefaultJsonParser('error', 'error'), parseIsoTimestamp, prescans),
  );

  const producerOf = lazyProducer(app);

  function jobStore(): JobStore {
    if (!jobs) throw new AppError(ERRORS.ServiceUnavailable, 'Detection jobs are not configured on this server.');
    return jobs;
  }

  /** Runs a job-store call; its failure is a retriable 503, never a 500. */
  async function stored<T>(request: FastifyRequest, what: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (cause) {
      if (cause instanceof AppError) throw cause;
      request.log.error({ err: cause }, `job store failed: ${what}`);
      throw new AppError(ERRORS.ServiceUnavailable, 'The job store cannot be reached right now. Retry shortly.', { cause });
    }
  }

  async function requireJob(request: FastifyRequest, orgId: string, rawId: unknown): Promise<JobRecord> {
    const jobId = parseJobId(rawId);
    const job = jobId === null ? null : await stored(request, 'reading a job', () => jobStore().get(orgId, jobId));
    if (job === null) throw new AppError(ERRORS.JobNotFound, `Job '${String(rawId).slice(0, 64)}' not found.`);
    return job;
  }

  function refuseForLoad(reply: FastifyReply, definition: typeof ERRORS.TooManyActiveJobs | typeof ERRORS.TooManyPendingPoints, message: string): FastifyReply {
    return reply
      .code(definition.statusCode)
      .header('retry-after', String(options.retryAfterSeconds))
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ error: { code: definition.code, message } }));
  }

  /**
   * The baselines the job is judged with: each machine's whose series need one, that is where the
   * request gave no sensitivity (the baseline's is used) or where a series is multichannel (the
   * baseline's joint model gives the machine verdict).
   */
  async function jobBaselines(request: FastifyRequest, orgId: string, parsed: ParsedJobRequest): Promise<Map<string, BaselineRecord>> {
    const wanted = new Set<string>();
    if (!parsed.sensitivityGiven) for (const one of parsed.series) if (one.machineId !== null) wanted.add(one.machineId);
    for (const group of parsed.multichannel) if (group.machineId !== null) wanted.add(group.machineId);
    const found = new Map<string, BaselineRecord>();
    if (wanted.size === 0) return found;
    // One listing, then the baselines of the job's machines that have one: a job of a thousand
    // machines without baselines costs one query.
    const machines = await stored(request, 'listing machines', () => options.store.listMachines(orgId));
    for (const machine of machines) {
      if (machine.baselineCreatedAt === null || !wanted.has(machine.machineId)) continue;
      const baseline = await stored(request, 'reading a baseline', () => options.store.getBaseline(orgId, machine.machineId));
      if (baseline) found.set(machine.machineId, baseline);
    }
    return found;
  }

  /**
   * The job's series in order: each series of the request, a multichannel one as its channels and,
   * where its machine's baseline has a joint model, the machine verdict after them. A multichannel
   * series must then carry every channel of the model (as POST /v1/detect requires).
   */
  function jobSeriesOf(parsed: ParsedJobRequest, baselines: ReadonlyMap<string, BaselineRecord>): PlannedSeries[] {
    const sensitivityOf = (machineId: string | null): number | undefined =>
      parsed.sensitivityGiven || machineId === null ? undefined : (baselines.get(machineId)?.sensitivity ?? undefined);
    const planned: PlannedSeries[] = [];
    parsed.series.forEach((one, index) => {
      planned.push({ machineId: one.machineId, timestampsMs: one.timestampsMs, values: one.values, width: 1, sensitivity: sensitivityOf(one.machineId), ...(one.channel !== undefined ? { channel: one.channel } : {}) });
      const group = parsed.multichannel.find((candidate) => candidate.from + candidate.channels.length - 1 === index);
      const model = group && group.machineId !== null ? (baselines.get(group.machineId)?.machineModel ?? null) : null;
      if (!group || model === null) return;
      const decoded = decodeMachineModel(model);
      if (decoded === null) return;
      const lacking = lacksModelChannels(decoded.channels, (name) => group.channels.includes(name), seriesName(group.index, group.machineId));
      if (lacking !== null) throw lacking;
      const columns = decoded.channels.map((name) => parsed.series[group.from + group.channels.indexOf(name)]!.values);
      const points = columns[0]!.length;
      const readings = new Array<number>(points * columns.length);
      for (let t = 0; t < points; t++) for (let c = 0; c < columns.length; c++) readings[t * columns.length + c] = columns[c]![t]!;
      planned.push({
        machineId: group.machineId,
        timestampsMs: parsed.series[group.from]!.timestampsMs,
        values: readings,
        width: columns.length,
        sensitivity: sensitivityOf(group.machineId),
        machine: { channels: decoded.channels, model },
      });
    });
    return planned;
  }

  /** The job's chunk messages: each series cut into runs of at most chunkPoints values. */
  function chunksOf(orgId: string, jobId: string, planned: readonly PlannedSeries[]): { messages: OutgoingMessage[]; series: JobSeries[] } {
    const messages: OutgoingMessage[] = [];
    const series: JobSeries[] = [];
    planned.forEach((one, seriesIndex) => {
      const count = one.values.length / one.width;
      // A machine verdict's point is `width` values: its chunks hold as many values as a series' do.
      const perChunk = Math.max(1, Math.floor(options.chunkPoints / one.width));
      const chunkCount = Math.max(1, Math.ceil(count / perChunk));
      const key = `${orgId}/${jobId}/${seriesIndex}`;
      for (let chunkIndex = 0; chunkIndex < chunkCount; chunkIndex++) {
        const from = chunkIndex * perChunk;
        const to = Math.min(count, from + perChunk);
        const value = codecs.jobChunk.encode({
          organization: orgId,
          job_id: jobId,
          series_index: seriesIndex,
          chunk_index: chunkIndex,
          chunk_count: chunkCount,
          first_point: from,
          timestamps: one.timestampsMs === null ? null : one.timestampsMs.slice(from, to),
          values: one.values.slice(from * one.width, to * one.width),
        });
        messages.push({ key, value });
      }
      series.push({
        machineId: one.machineId,
        points: count,
        chunks: chunkCount,
        timestamps: one.timestampsMs !== null,
        ...(one.sensitivity !== undefined ? { sensitivity: one.sensitivity } : {}),
        ...(one.channel !== undefined ? { channel: one.channel } : {}),
        ...(one.machine !== undefined ? { machine: one.machine } : {}),
      });
    });
    return { messages, series };
  }

  /** What identifies a submission for its Idempotency-Key: the options and every series' points. */
  function requestHash(parsed: ParsedJobRequest): string {
    const hash = createHash('sha256').update(JSON.stringify(parsed.options));
    for (const one of parsed.series) {
      hash.update(`\u0000${one.machineId ?? ''}\u0000${one.channel ?? ''}\u0000`);
      hash.update(new Uint8Array(Float64Array.from(one.values).buffer));
      if (one.timestampsMs !== null) hash.update(new Uint8Array(Float64Array.from(one.timestampsMs).buffer));
    }
    return hash.digest('hex');
  }

  async function describe(request: FastifyRequest, job: JobRecord): Promise<JobBody> {
    const progress = await stored(request, 'reading progress', () => jobStore().progress(job.orgId, job.jobId));
    return jobBody(job, progress, nowMs());
  }

  app.post(
    '/v1/jobs',
    {
      bodyLimit: options.bodyLimitBytes,
      preParsing: prescans.hook,
      schema: {
        tags: TAGS,
        operationId: 'submitJob',
        summary:
          'Submit series of any length (up to JOBS_MAX_POINTS) for entire-series detection; answers 202 with the job. JSON, or one series as text/csv with the options in the query.',
        consumes: ['application/json', 'text/csv'],
        querystring: JobCsvQuery,
        // Validated as JSON only: a CSV body is text here, checked once ./csv.ts has made it JSON.
        body: { content: { 'application/json': { schema: JobRequest }, 'text/csv': { schema: Type.String() } } },
        response: { 202: JobBody, 403: NativeError, ...ERROR_RESPONSES },
      },
      // A body the JSON scanner read is checked by parseJobBody (its options against the same
      // schema; its series as they were scanned), not point by point again here.
      validatorCompiler: (route) => {
        const validate = compileValidator(route);
        if (route.httpPart !== 'body') return validate;
        // Fastify reads a failure's errors from the function it called.
        const scannedOrValid: FastifyValidationResult = (data: unknown) => {
          if (data instanceof ScannedJobBody) return true;
          const valid = validate(data);
          scannedOrValid.errors = validate.errors ?? null;
          return valid;
        };
        return scannedOrValid;
      },
    },
    async (request, reply) => {
      const orgId = orgOf(request);
      const idempotencyKey = parseIdempotencyKey(request.headers['idempotency-key']);
      const limits = { maxPoints: options.maxPoints, maxSeries: options.maxSeries };
      const parsed =
        typeof request.body === 'string'
          ? parseJobRequest(checkJobRequest(csvJobBody(request.body, request.query, parseIsoTimestamp)), limits, parseIsoTimestamp)
          : parseJobBody(request.body, limits, parseIsoTimestamp, checkJobRequest);
      const store = jobStore();
      if (!bus) throw new AppError(ERRORS.ServiceUnavailable, 'Detection jobs are not configured on this server (no bus).');
      const hash = requestHash(parsed);

      if (idempotencyKey !== null) {
        // A retry answers the job it made, whatever the caps say now.
        const same = await stored(request, 'reading a job', () => store.byIdempotencyKey(orgId, idempotencyKey));
        if (same) return replay(request, reply, same, hash);
      }
      const load = await stored(request, 'reading the active jobs', () => store.activeLoad(orgId));
      if (load.jobs >= options.maxActivePerOrg) {
        return refuseForLoad(
          reply,
          ERRORS.TooManyActiveJobs,
          `This organization has ${load.jobs} jobs queued or running, the most it may have (JOBS_MAX_ACTIVE_PER_ORG ${options.maxActivePerOrg}). Retry once one has finished.`,
        );
      }
      if (load.pointsPending + parsed.points > options.maxPendingPointsPerOrg) {
        return refuseForLoad(
          reply,
          ERRORS.TooManyPendingPoints,
          `This organization has ${load.pointsPending} points queued for judging; with this job's ${parsed.points} that passes the ${options.maxPendingPointsPerOrg} allowed (JOBS_MAX_PENDING_POINTS_PER_ORG). Retry once the running jobs have advanced.`,
        );
      }

      const jobId = newJobId();
      const { messages, series } = chunksOf(orgId, jobId, jobSeriesOf(parsed, await jobBaselines(request, orgId, parsed)));
      const record: JobRecord = {
        jobId,
        orgId,
        status: 'queued',
        idempotencyKey,
        requestHash: hash,
        series,
        // Every series' points, a machine verdict's included: what the worker counts as done.
        pointsTotal: series.reduce((sum, one) => sum + one.points, 0),
        options: parsed.options,
        createdAtMs: nowMs(),
        startedAtMs: null,
        finishedAtMs: null,
        failure: null,
      };
      const created = await stored(request, 'recording a job', () => store.create(record));
      if (!created.created) return replay(request, reply, created.job, hash);
      try {
        await publishChunks(await producerOf(bus), topic, messages);
        await usage.count(orgId, request.auth.keyKind, JOBS_ENDPOINT, parsed.points);
      } catch (cause) {
        request.log.error({ err: cause, jobId, points: parsed.points }, 'job could not be queued; removing it');
        await store.remove(orgId, jobId).catch((err: unknown) => request.log.error({ err, jobId }, 'could not remove the job that was not queued'));
        throw new AppError(ERRORS.ServiceUnavailable, 'The job could not be queued; retry the request (with the same Idempotency-Key it is still one job).', {
          cause,
        });
      }
      request.log.info({ jobId, points: parsed.points, series: series.length, chunks: messages.length }, 'job accepted');
      return reply.code(202).header('location', `/v1/jobs/${jobId}`).send(jobBody(record, { seriesDone: 0, pointsDone: 0, periods: new Map() }, nowMs()));
    },
  );

  async function replay(request: FastifyRequest, reply: FastifyReply, job: JobRecord, hash: string): Promise<FastifyReply> {
    if (job.requestHash !== hash) {
      throw new AppError(
        ERRORS.IdempotencyKeyReused,
        `The Idempotency-Key was used for job '${job.jobId}' with other series or options; use a new key for a new job.`,
      );
    }
    return reply.code(202).header('location', `/v1/jobs/${job.jobId}`).header('idempotent-replayed', 'true').send(await describe(request, job));
  }

  app.get(
    '/v1/jobs/:job_id',
    {
      schema: {
        tags: TAGS,
        operationId: 'getJob',
        summary: "A job's status, progress, timings and, when it failed, why and where.",
        params: JobParams,
        response: { 200: JobBody, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const job = await requireJob(request, orgId, request.params.job_id);
      return describe(request, job);
    },
  );

  app.get(
    '/v1/jobs/:job_id/results',
    {
      schema: {
        tags: TAGS,
        operationId: 'jobResults',
        summary:
          "A page of a job's per-point results in (series, point) order, with the episodes of flagged points they touch; machine_id: that machine's series only; series_index: that series only.",
        params: JobParams,
        querystring: JobResultsQuery,
        response: { 200: JobResultsResponse, ...ERROR_RESPONSES },
      },
      serializerCompiler: () => (data) => JSON.stringify(data),
    },
    async (request) => {
      const orgId = orgOf(request);
      const query = parseJobResultsQuery(request.query);
      const job = await requireJob(request, orgId, request.params.job_id);
      const store = jobStore();
      // One machine's series only (a multichannel machine has several, side by side), or one
      // series: its rows from the start of its first series (or the cursor on).
      const mine = query.machineId === undefined ? [] : job.series.flatMap((series, index) => (series.machineId === query.machineId ? [index] : []));
      if (query.machineId !== undefined && mine.length === 0) throw new AppError(ERRORS.InvalidArgument, `Job '${job.jobId}' has no series of machine '${query.machineId}'.`);
      if (query.seriesIndex !== undefined) {
        if (query.seriesIndex >= job.series.length) throw new AppError(ERRORS.InvalidArgument, `Job '${job.jobId}' has ${job.series.length} series; 'series_index' ${query.seriesIndex} is not one of them.`);
        if (query.machineId !== undefined && !mine.includes(query.seriesIndex)) {
          throw new AppError(ERRORS.InvalidArgument, `Series ${query.seriesIndex} of job '${job.jobId}' is not machine '${query.machineId}''s.`);
        }
      }
      const only =
        query.seriesIndex !== undefined ? { from: query.seriesIndex, to: query.seriesIndex } : mine.length === 0 ? null : { from: mine[0]!, to: mine[mine.length - 1]! };
      if (only !== null && query.after !== undefined && (query.after.seriesIndex < only.from || query.after.seriesIndex > only.to)) {
        throw new AppError(ERRORS.InvalidArgument, "The 'cursor' query parameter is another series': use the previous page's next_cursor with the same machine_id and series_index.");
      }
      const after = query.after ?? (only === null ? undefined : { seriesIndex: only.from, pointIndex: -1 });
      const fetched = await stored(request, 'reading results', () => store.results(orgId, job.jobId, { limit: query.limit + 1, ...(after ? { after } : {}) }));
      const rows = only === null ? fetched : fetched.filter((row) => row.seriesIndex >= only.from && row.seriesIndex <= only.to);
      const page = rows.slice(0, query.limit);
      const first = page[0];
      const last = page[page.length - 1];
      const episodes =
        first === undefined || last === undefined
          ? []
          : (await stored(request, 'reading episodes', () => store.episodes(orgId, job.jobId))).filter(
              (episode) =>
                (episode.seriesIndex > first.seriesIndex || (episode.seriesIndex === first.seriesIndex && episode.lastPoint >= first.pointIndex)) &&
                (episode.seriesIndex < last.seriesIndex || (episode.seriesIndex === last.seriesIndex && episode.firstPoint <= last.pointIndex)),
            );
      return {
        job_id: job.jobId,
        status: job.status,
        results: page.map((row) => rowBody(row, job)),
        episodes: episodes.map((episode) => episodeBody(episode, job)),
        next_cursor: rows.length > query.limit && last ? encodeResultsCursor(last) : null,
      };
    },
  );

  app.get(
    '/v1/jobs',
    {
      schema: {
        tags: TAGS,
        operationId: 'listJobs',
        summary: "The organization's jobs, newest first, paged.",
        querystring: JobsQuery,
        response: { 200: JobsResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const query = parseJobsQuery(request.query);
      const store = jobStore();
      const listed = await stored(request, 'listing jobs', () =>
        store.list(orgId, { limit: query.limit + 1, ...(query.before ? { before: query.before } : {}) }),
      );
      const page = listed.slice(0, query.limit);
      const bodies: JobBody[] = [];
      for (const job of page) bodies.push(await describe(request, job));
      const last = page[page.length - 1];
      return { jobs: bodies, next_cursor: listed.length > query.limit && last ? last.jobId : null };
    },
  );

  app.delete(
    '/v1/jobs/:job_id',
    {
      schema: {
        tags: TAGS,
        operationId: 'deleteJob',
        summary: 'Cancels a queued or running job (its results so far are dropped), or deletes a finished job and its results.',
        params: JobParams,
        response: { 200: JobDeleted, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const job = await requireJob(request, orgId, request.params.job_id);
      const store = jobStore();
      if (!FINISHED_JOB_STATUSES.includes(job.status)) {
        const cancelled = await stored(request, 'cancelling a job', () =>
          store.transition(orgId, job.jobId, ['queued', 'running'], { status: 'cancelled', finishedAtMs: nowMs() }),
        );
        if (cancelled) return { job_id: job.jobId, action: 'cancelled' as const };
        // It finished meanwhile: delete it as a finished job.
      }
      const removed = await stored(request, 'deleting a job', () => store.remove(orgId, job.jobId));
      if (!removed) throw new AppError(ERRORS.JobNotFound, `Job '${job.jobId}' not found.`);
      return { job_id: job.jobId, action: 'deleted' as const };
    },
  );
};
