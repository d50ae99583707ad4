// The native API: POST /v1/detect, POST|GET /v1/baseline, GET /v1/machines,
// DELETE /v1/machines/{machine_id}, GET /v1/status/{machine_id}. README.md beside this file
// documents the shapes and the regime rules. The machine list and status also carry each
// machine's telemetry summary from the injected ResultStore (machines/service.ts merges them). Errors use the app's coded shape
// `{"error":{"code","message"}}` (the app-wide error handler writes it).
import { randomUUID } from 'node:crypto';
import { seriesEpisodes } from '@adp/alerts';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { detectEntireSeries, learnedScores, parseIsoTimestamp, shapeScoresInSlices, type DetectOptions, type EntireResult, type ShapeScores } from '@adp/detection';
import { levelVerdict } from '@adp/machine';
import { isStoreError, type BaselineRecord, type Store } from '@adp/store';
import {
  BASELINE_CHANGED_CHANNEL,
  channelSeriesId,
  type CheckpointStore,
  type Notifier,
  type ResultStore,
} from '@adp/streaming';
import { AppError, ERRORS } from '../errors.js';
import { audit } from '../tenancy/audit.js';
import { usageMeter, type HourlyCallCounting } from '../tenancy/metering.js';
import type { AdmissionGate } from '../machines/admission.js';
import { seriesEnergyStats } from '../machines/energy-stats.js';
import { ModelHolder, toModelAppError, type NativeModel, type NativeModelFactory } from '../machines/model.js';
import { changePointsOf, machineRegimes } from '../machines/regimes.js';
import { BaselineService, type MachinePredictor } from '../machines/service.js';
import { learnedVerdicts, type Verdicts } from '../machines/verdict.js';
import { nextTurn } from '../machines/next-turn.js';
import { activeWhere, countRegimes, unknownRegimes, zScoresOf, type Regime } from '@adp/regimes';
import { baselinePublisher, parseBaselineChanged } from './baseline-changes.js';
import {
  baselineBody,
  dataDecimals,
  ENERGY_DIGITS,
  episodesBody,
  finiteOrFail,
  iso,
  multivariateBaselineBody,
  roundedDecimals,
  roundedEmbeddings,
  roundedSignificant,
  SCORE_DECIMALS,
  telemetryBody,
} from './bodies.js';
import {
  inChannelError,
  isMultivariate,
  machineJudgement,
  parseMultivariateBaselineRequest,
  parseMultivariateDetectRequest,
  judgeAgainstMachineModel,
  withMachineVerdict,
  type MachineVerdictBody,
  type MultivariateDetectRequest,
} from './multivariate.js';
import { parseBaselineRequest, parseDetectRequest, toNativeError, type NativeDetectRequest, type SchemaPoint } from './request.js';
import { useSchemaValidation } from '../schema-validation.js';
import {
  BaselineQuery,
  BaselineRequest,
  BaselineResponse,
  DeleteMachineResponse,
  DetectRequest,
  DetectResponse,
  ID_RULES,
  MachineParams,
  MachineStatusResponse,
  MachinesQuery,
  MachinesResponse,
  MultivariateDetectResponse,
  NativeError,
  type DetectResponse as DetectBody,
  type MultivariateDetectResponse as MultivariateDetectBody,
} from './schemas.js';

/** Usage labels of the native routes. */
export type NativeEndpoint = 'v1/detect' | 'v1/baseline';

export interface NativeRoutesOptions {
  readonly store: Store;
  /** Builds the learned model on the first native request. */
  readonly model: NativeModelFactory;
  /** PREDICTOR_CACHE_SIZE. */
  readonly predictorCacheSize: number;
  /**
   * Bounds the detections (their energies, embeddings and body) and fine-tuning baselines that run
   * and wait at once (MODEL_CALLS_MAX_RUNNING, MODEL_CALLS_MAX_QUEUED); beyond both, 503 ServerBusy.
   */
  readonly modelCalls: AdmissionGate;
  /**
   * Baseline changes between replicas: this replica publishes its writes and deletes on
   * BASELINE_CHANGED_CHANNEL and drops its cached predictor when another replica's arrive.
   * Absent: one replica, nothing to tell.
   */
  readonly notifier?: Notifier;
  /**
   * The streaming results: GET /v1/machines and GET /v1/status/{machine_id} add each machine's
   * telemetry summary and list machines known only from their results. Absent: `telemetry` is
   * null everywhere. Unreachable: those two routes answer 503. The caller owns it.
   */
  readonly results?: Pick<ResultStore, 'machines' | 'deleteMachine'>;
  /** The workers' checkpoints: DELETE /v1/machines/{machine_id} removes the machine's. The caller owns it. */
  readonly checkpoints?: Pick<CheckpointStore, 'deleteMachine'>;
  /** With a marketplace listing: live detections also count toward their hour's billed calls. */
  readonly hourlyCounting?: HourlyCallCounting;
}

const TAGS = ['native'];
const ERROR_RESPONSES = { 400: NativeError, 404: NativeError, 413: NativeError, 415: NativeError, 503: NativeError } as const;
/** The codes of schema failures: the machine id's, the series' (or energies'), else InvalidArgument. */
const NATIVE_SCHEMA_ERRORS = {
  fields: { machine_id: 'InvalidMachineId', series: 'InvalidSeries', energies: 'InvalidSeries' },
  patterns: ID_RULES,
} as const;
/** What a detection knows before the learned model runs. */
interface PreparedDetection {
  readonly parsed: NativeDetectRequest;
  /** The series judged (a channel's `<machine_id>:<channel>`); null without a machine. */
  readonly seriesId: string | null;
  readonly predictor: MachinePredictor | null;
  readonly entire: EntireResult;
  /** The sensitivity and cap the engine judged with (a baseline's sensitivity when the request gave none). */
  readonly options: DetectOptions;
}

function orgOf(request: FastifyRequest): string {
  // `auth` is null only if a route forgot to require a key: a bug, not a client error.
  const orgId = (request.auth as typeof request.auth | null)?.orgId;
  if (!orgId) throw new AppError(ERRORS.InternalError, 'Native route ran without an authenticated caller');
  return orgId;
}

export const nativeRoutes: FastifyPluginAsync<NativeRoutesOptions> = async (fastify, options) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const store = options.store;
  const usage = usageMeter(store, options.hourlyCounting);
  const holder = new ModelHolder(options.model);
  const notifier = options.notifier;
  const replicaId = randomUUID();
  const modelCalls = options.modelCalls;
  const service = new BaselineService({
    store,
    model: holder,
    cacheSize: options.predictorCacheSize,
    ...(notifier ? { onChanged: baselinePublisher(notifier, replicaId, fastify.log) } : {}),
    ...(options.results ? { results: options.results } : {}),
    ...(options.checkpoints ? { checkpoints: options.checkpoints } : {}),
  });
  app.addHook('onClose', async () => {
    await holder.close();
  });
  if (notifier) {
    const unsubscribe = await notifier.subscribe(BASELINE_CHANGED_CHANNEL, (text) => {
      const message = parseBaselineChanged(text);
      if (message === null) {
        fastify.log.warn({ channel: BASELINE_CHANGED_CHANNEL }, 'ignored a malformed baseline-change message');
        return;
      }
      if (message.origin === replicaId) return;
      service.dropCached(message.orgId, message.machineId);
    });
    app.addHook('onClose', async () => {
      await unsubscribe();
    });
  }
  // Bodies, queries and paths are validated against ./schemas.ts; a failure names its field.
  useSchemaValidation(app, NATIVE_SCHEMA_ERRORS);

  async function meter(request: FastifyRequest, endpoint: NativeEndpoint, points: number): Promise<void> {
    try {
      await usage.count(orgOf(request), request.auth.keyKind, endpoint, points);
    } catch (cause) {
      throw new AppError(ERRORS.ServiceUnavailable, 'Usage could not be recorded; retry the request.', { cause });
    }
  }

  async function model(): Promise<NativeModel> {
    return holder.get();
  }

  async function energiesOf(
    current: NativeModel,
    values: readonly number[],
    predictor: MachinePredictor | null,
    includeEmbeddings: boolean,
  ): Promise<{ energies: number[]; embeddings: Float32Array[] | null; inferenceMs: number }> {
    const started = performance.now();
    let result;
    try {
      result = await current.energies(values, {
        ...(predictor?.weights ? { weights: predictor.weights } : {}),
        ...(predictor?.normalisation ? { normalisation: predictor.normalisation } : {}),
        includeEmbeddings,
      });
    } catch (cause) {
      throw toModelAppError(cause, 'computing energies');
    }
    const inferenceMs = performance.now() - started;
    return { energies: finiteOrFail(result.energies, 'energy'), embeddings: result.embeddings, inferenceMs };
  }

  app.post(
    '/v1/detect',
    {
      schema: {
        tags: TAGS,
        operationId: 'nativeDetect',
        summary: 'Anomalies, energies, z-scores, regimes and (optionally) embeddings for a series.',
        body: DetectRequest,
        response: { 200: Type.Union([DetectResponse, MultivariateDetectResponse]), ...ERROR_RESPONSES },
      },
      // The body is built field by field below; for arrays of thousands of numbers (and 192 per
      // point with embeddings) V8's JSON.stringify is much faster than a schema serialiser.
      serializerCompiler: () => (data) => JSON.stringify(data),
    },
    async (request): Promise<DetectBody | MultivariateDetectBody> => {
      const orgId = orgOf(request);
      const body = request.body;
      if (isMultivariate(body)) return detectChannels(request, orgId, parseMultivariateDetectRequest(body, body.series, parseIsoTimestamp));
      // Not multivariate: the first point has no channels, and splitting found every point's value.
      const parsed = parseDetectRequest(body, body.series as SchemaPoint[], parseIsoTimestamp);
      const prepared = await prepareDetection(orgId, parsed, parsed.machineId);
      const channels = prepared.predictor?.baseline.channels;
      if (channels) {
        throw new AppError(
          ERRORS.InvalidSeries,
          `Machine '${parsed.machineId ?? ''}' has a multivariate baseline (channels ${channels.join(', ')}): send points with 'channels', or detect one channel as '<machine_id>:<channel>'.`,
        );
      }
      // Everything from here holds the model's output (embeddings are 192 floats a point): bounded.
      return modelCalls.run(async () => {
        const judged = await judgeSeries(await model(), prepared);
        await meter(request, 'v1/detect', parsed.input.values.length);
        await recordFor(request, orgId, parsed.machineId, prepared.predictor, parsed.input.values.length, judged.body.regimes);
        return judged.body;
      });
    },
  );

  /** A series' baseline and the engine's answer; the engine runs before the model loads, so a series it refuses is a 400 without model cost. */
  async function prepareDetection(orgId: string, parsed: NativeDetectRequest, seriesId: string | null): Promise<PreparedDetection> {
    const predictor = seriesId === null ? null : await service.predictorFor(orgId, seriesId);
    // The baseline's sensitivity applies when the request has none.
    const baselineSensitivity = parsed.sensitivityGiven ? null : (predictor?.baseline.sensitivity ?? null);
    const detectOptions = baselineSensitivity !== null ? { ...parsed.options, sensitivity: baselineSensitivity } : parsed.options;
    let entire: EntireResult;
    try {
      entire = detectEntireSeries(parsed.input, detectOptions);
    } catch (error) {
      throw toNativeError(error, 'InvalidSeries');
    }
    return { parsed, seriesId, predictor, entire, options: detectOptions };
  }

  /** The learned model's part of a detection and the answer's body. */
  async function judgeSeries(current: NativeModel, prepared: PreparedDetection): Promise<{ body: DetectBody; zScores: Float64Array }> {
    const { parsed, predictor, entire } = prepared;
    const values = parsed.input.values;
    // The model runs in a worker thread; meanwhile this thread joins the shapes and finds the
    // changepoints, which do not need the energies.
    const [{ energies, embeddings, inferenceMs }, { shapes, changePoints }] = await Promise.all([
      energiesOf(current, values, predictor, parsed.includeEmbeddings),
      beside(prepared),
    ]);

    let zScores: Float64Array;
    let regimes: Regime[];
    let verdicts: Verdicts = entire;
    if (predictor) {
      const { energyMean, energyStd } = predictor.baseline.stats;
      zScores = zScoresOf(energies, energyMean, energyStd);
      // With a baseline what the machine's baseline learnt takes part in the verdict beside the
      // engine's residual: its energies' z-score, plus the shape score where the baseline keeps
      // shapes and the point's shape is less usual than usual (an ordinary shape adds nothing, and
      // takes nothing from what the energies say). Which points are flagged reads the shape score
      // within (the most ordinary subsequence the point is part of), so flags land on unusual
      // points and not half a subsequence before them; how severe a flag is reads the centred one
      // (the answer's shape_scores), which sees the whole unusual subsequence around the point.
      const joined = learnedVerdicts({
        values,
        entire,
        scores: shapes === null ? zScores : learnedScores(zScores, shapes.within),
        ...(shapes === null ? {} : { severityScores: learnedScores(zScores, shapes.around) }),
        sensitivity: prepared.options.sensitivity,
        maxAnomalyRatio: prepared.options.maxAnomalyRatio,
        ...(predictor.levelModel === null ? {} : { level: levelVerdict(predictor.levelModel, values, prepared.options.sensitivity) }),
      });
      verdicts = joined;
      // z_scores stay the series' own; the regimes judge them with spikes' echoes taken out, and
      // a departure that holds is at least ACTIVE.
      regimes = activeWhere(await machineRegimes({ model: current, predictor, values, zScores, changePoints }), joined.held);
    } else {
      const own = seriesEnergyStats(energies);
      zScores = zScoresOf(energies, own.energyMean, own.energyStd);
      regimes = unknownRegimes(values.length);
    }
    const episodes = seriesEpisodes(verdicts);
    // Checked whether or not the answer carries them: they took part in the verdicts.
    const zScoresOut = finiteOrFail(zScores, 'z-score');
    const shapeScoresOut = shapes === null ? null : finiteOrFail(shapes.around, 'shape score');
    // The answer's numbers carry the digits that mean something (bodies.ts says how many): the
    // verdicts above were reached at full precision.
    const decimals = dataDecimals(values);
    const body: DetectBody = {
      period: entire.period,
      expectedValues: roundedDecimals(finiteOrFail(entire.expectedValues, 'expected value'), decimals),
      upperMargins: roundedDecimals(finiteOrFail(verdicts.upperMargins, 'margin'), decimals),
      lowerMargins: roundedDecimals(finiteOrFail(verdicts.lowerMargins, 'margin'), decimals),
      isAnomaly: verdicts.isAnomaly,
      isNegativeAnomaly: verdicts.isNegativeAnomaly,
      isPositiveAnomaly: verdicts.isPositiveAnomaly,
      severity: verdicts.severity,
      episodes: episodesBody(episodes, parsed.input.timestampsMs),
      regimes,
      energies: parsed.includeEnergy ? roundedSignificant(energies, ENERGY_DIGITS) : null,
      z_scores: parsed.includeZScores ? roundedDecimals(zScoresOut, SCORE_DECIMALS) : null,
      shape_scores: parsed.includeShapeScores && shapeScoresOut !== null ? roundedDecimals(shapeScoresOut, SCORE_DECIMALS) : null,
      embeddings: parsed.includeEmbeddings && embeddings ? roundedEmbeddings(embeddings) : null,
      model_version: current.modelVersion,
      engine: predictor?.weights ? 'fine-tuned' : 'generic',
      machine_id: prepared.seriesId,
      baseline_id: predictor?.baseline.baselineId ?? null,
      inference_time_ms: Math.round(inferenceMs * 1000) / 1000,
    };
    return { body, zScores };
  }

  /** A baselined detection's work besides the model: the shape join and the changepoints (none without a baseline). */
  async function beside(prepared: PreparedDetection): Promise<{ shapes: ShapeScores | null; changePoints: boolean[] | null }> {
    const { parsed, predictor, entire } = prepared;
    if (!predictor) return { shapes: null, changePoints: null };
    // A turn first, so the model's request leaves before the join takes this thread.
    await nextTurn();
    const reference = predictor.baseline.shapeReference ?? null;
    // The join is long for long requests: in slices, so other requests are served meanwhile.
    const shapes = reference === null ? null : await shapeScoresInSlices(parsed.input.values, reference, nextTurn);
    return { shapes, changePoints: changePointsOf(parsed.input, entire.period) };
  }

  /**
   * Counters only for a machine with a baseline: a detection naming any other id (a deleted
   * machine's included) does not register a machine. Status counters are bookkeeping: a failure
   * is logged, the detection still answers.
   */
  async function recordFor(
    request: FastifyRequest,
    orgId: string,
    machineId: string | null,
    predictor: MachinePredictor | null,
    points: number,
    regimes: readonly Regime[],
  ): Promise<void> {
    if (machineId === null || predictor === null) return;
    await service
      .recordDetection(orgId, machineId, { points, withBaseline: true, regimeCounts: countRegimes(regimes) })
      .catch((err: unknown) => request.log.warn({ err, machineId }, 'could not record the detection'));
  }

  /**
   * A multivariate detection: each channel judged as its own series `<machine_id>:<channel>` (its
   * baseline, else the generic model), all at once in one admission slot (the model's threads
   * share their energies out), then the machine-level regimes and their drivers.
   */
  async function detectChannels(request: FastifyRequest, orgId: string, parsed: MultivariateDetectRequest): Promise<MultivariateDetectBody> {
    const machineId = parsed.machineId;
    const prepared: { channel: string; prepared: PreparedDetection }[] = [];
    for (const { channel, request: channelRequest } of parsed.channels) {
      const seriesId = machineId === null ? null : channelSeriesId(machineId, channel);
      try {
        prepared.push({ channel, prepared: await prepareDetection(orgId, channelRequest, seriesId) });
      } catch (error) {
        throw inChannelError(error, channel);
      }
    }
    const machine = machineId === null ? null : await service.predictorFor(orgId, machineId);
    return modelCalls.run(async () => {
      const current = await model();
      // A failure names the first failing channel in the request's order, whichever failed first in time.
      const settled = await Promise.allSettled(prepared.map(({ prepared: one }) => judgeSeries(current, one)));
      const judged = settled.map((outcome, index) => {
        const channel = prepared[index]!.channel;
        if (outcome.status === 'rejected') throw inChannelError(outcome.reason, channel);
        return { channel, ...outcome.value };
      });
      let overall = machineJudgement(judged.map(({ channel, body, zScores }) => ({ channel, regimes: body.regimes, zScores })));
      const joint = machine?.machineModel ?? null;
      let machineBody: MachineVerdictBody | null = null;
      if (joint !== null) {
        const first = parsed.channels[0]!.request;
        const sensitivity = first.sensitivityGiven ? first.options.sensitivity : (machine?.baseline.sensitivity ?? first.options.sensitivity);
        const judgedJointly = judgeAgainstMachineModel(joint, parsed.channels, sensitivity);
        machineBody = judgedJointly.body;
        overall = withMachineVerdict(overall, joint, judgedJointly.verdict);
      }
      await meter(request, 'v1/detect', parsed.points * judged.length);
      for (const { channel, prepared: one } of prepared) {
        await recordFor(request, orgId, one.seriesId, one.predictor, parsed.points, judged.find((j) => j.channel === channel)?.body.regimes ?? []);
      }
      await recordFor(request, orgId, machineId, machine, parsed.points, overall.regimes);
      return {
        machine_id: machineId,
        baseline_id: machine?.baseline.baselineId ?? null,
        model_version: current.modelVersion,
        regimes: overall.regimes,
        driver: overall.driver,
        drivers: overall.drivers,
        channels: Object.fromEntries(judged.map(({ channel, body }) => [channel, body])),
        inference_time_ms: Math.round(judged.reduce((sum, { body }) => sum + body.inference_time_ms, 0) * 1000) / 1000,
        machine: machineBody,
      };
    });
  }

  app.post(
    '/v1/baseline',
    {
      schema: {
        tags: TAGS,
        operationId: 'createBaseline',
        summary: "Create or replace a machine's baseline: fine-tune on healthy data, or store energy statistics.",
        body: BaselineRequest,
        response: { 200: BaselineResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const body = request.body;
      if (isMultivariate(body) && body.series) {
        const parsed = parseMultivariateBaselineRequest(body, body.series, parseIsoTimestamp);
        const settings = {
          machineId: parsed.machineId,
          label: parsed.label,
          granularity: parsed.granularity,
          sensitivity: parsed.sensitivity,
        };
        const channels = parsed.channels.map(({ channel, request: one }) => ({ channel, values: one.values }));
        // One admission slot for the whole request: its channels fine-tune in parallel on the model's threads.
        const written = await modelCalls.run(() => service.fromChannels(orgId, settings, channels)).catch(asModelFailure);
        await meter(request, 'v1/baseline', parsed.points * channels.length);
        return multivariateBaselineBody(written.record, written.channels);
      }
      const parsed = parseBaselineRequest(body, body.series as SchemaPoint[] | null | undefined, parseIsoTimestamp);
      const settings = {
        machineId: parsed.machineId,
        label: parsed.label,
        granularity: parsed.granularity,
        sensitivity: parsed.sensitivity,
      };
      let record: BaselineRecord;
      let points: number;
      const replacing = (await service.getBaseline(orgId, parsed.machineId)) !== null;
      if (parsed.kind === 'series') {
        points = parsed.values.length;
        record = await modelCalls.run(() => service.fromSeries(orgId, settings, parsed.values)).catch(asModelFailure);
      } else {
        points = parsed.energies.length;
        record = await service.fromEnergies(orgId, settings, parsed.energies);
      }
      await meter(request, 'v1/baseline', points);
      await audit(request, replacing ? 'baseline.updated' : 'baseline.created', `machine:${parsed.machineId}`);
      return baselineBody(record);
    },
  );

  app.get(
    '/v1/baseline',
    {
      schema: {
        tags: TAGS,
        operationId: 'getBaseline',
        summary: "A machine's current baseline.",
        querystring: BaselineQuery,
        response: { 200: BaselineResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const machineId = request.query.machine_id;
      const record = await service.getBaseline(orgId, machineId);
      if (!record) throw new AppError(ERRORS.BaselineNotFound, `Machine '${machineId}' has no baseline. Create one with POST /v1/baseline.`);
      if (record.channels) return multivariateBaselineBody(record, await service.channelBaselines(orgId, record));
      return baselineBody(record);
    },
  );

  app.get(
    '/v1/machines',
    {
      schema: {
        tags: TAGS,
        operationId: 'listMachines',
        summary:
          "The organization's machines with an active baseline, each with its telemetry summary; with include=telemetry also those without a baseline (known from stored streaming results).",
        querystring: MachinesQuery,
        response: { 200: MachinesResponse, 400: NativeError, 503: NativeError },
      },
    },
    async (request) => {
      const includeTelemetry = request.query.include === 'telemetry';
      const machines = await service.listMachines(orgOf(request), includeTelemetry);
      return {
        machines: machines.map((machine) => ({
          machine_id: machine.machineId,
          baseline_created_at: iso(machine.baselineCreatedAt),
          num_windows: machine.numWindows,
          label: machine.label,
          ...(machine.channels ? { channels: [...machine.channels] } : {}),
          telemetry: telemetryBody(machine.telemetry),
        })),
        total: machines.length,
      };
    },
  );

  app.delete(
    '/v1/machines/:machine_id',
    {
      schema: {
        tags: TAGS,
        operationId: 'deleteMachine',
        summary:
          "Delete a machine and its channels: baselines, fine-tuned predictors, counters, stored streaming results and the workers' windows; detection goes back to the generic model.",
        params: MachineParams,
        response: { 200: DeleteMachineResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const machineId = request.params.machine_id;
      const result = await service.deleteMachine(orgId, machineId);
      if (!result.deleted) throw new AppError(ERRORS.MachineNotFound, `Machine '${machineId}' not found.`);
      await audit(request, result.baselineDeleted ? 'baseline.deleted' : 'machine.deleted', `machine:${machineId}`);
      return {
        machine_id: machineId,
        deleted: true as const,
        baseline_deleted: result.baselineDeleted,
        results_deleted: result.resultsDeleted,
      };
    },
  );

  app.get(
    '/v1/status/:machine_id',
    {
      schema: {
        tags: TAGS,
        operationId: 'machineStatus',
        summary: "A machine's baseline, the model its detections use, its detection counters and its telemetry summary.",
        params: MachineParams,
        response: { 200: MachineStatusResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => {
      const orgId = orgOf(request);
      const machineId = request.params.machine_id;
      const found = await service.machineStatus(orgId, machineId);
      if (!found) throw new AppError(ERRORS.MachineNotFound, `Machine '${machineId}' not found.`);
      const { record: status, telemetry } = found;
      const baseline = status?.baseline ?? null;
      const regimeCounts = { HEALTHY: 0, ACTIVE: 0, TRANSITION: 0, SHOCK: 0, UNKNOWN: 0 };
      let points = 0;
      const recentDetections = status?.recentDetections ?? [];
      for (const detection of recentDetections) {
        points += detection.points;
        for (const regime of Object.keys(regimeCounts) as (keyof typeof regimeCounts)[]) {
          regimeCounts[regime] += detection.regimeCounts[regime];
        }
      }
      // Known only from its stored results (service returns null when neither source knows it):
      // first sighting = its first stored point.
      const firstSeen = status?.firstSeenAt ?? new Date(telemetry?.firstTsMs ?? 0);
      return {
        machine_id: machineId,
        baseline_present: baseline !== null,
        baseline_id: baseline?.baselineId ?? null,
        baseline_created_at: iso(baseline?.createdAt ?? null),
        baseline_updated_at: iso(baseline?.updatedAt ?? null),
        label: baseline?.label ?? null,
        model_in_use: baseline?.machineModel ? ('machine-model' as const) : baseline?.predictorWeights ? ('fine-tuned' as const) : ('generic' as const),
        ...(baseline?.channels ? { channels: [...baseline.channels] } : {}),
        predictor_loaded: baseline?.predictorWeights ? service.isLoaded(orgId, machineId) : false,
        first_seen_at: firstSeen.toISOString(),
        counters_since: (status?.countersSince ?? firstSeen).toISOString(),
        detections_since: status?.detectionsSince ?? 0,
        points_since: status?.pointsSince ?? 0,
        last_detection_at: iso(status?.lastDetectionAt ?? null),
        recent: { detections: recentDetections.length, points, regime_counts: regimeCounts },
        telemetry: telemetryBody(telemetry),
      };
    },
  );
};

/** Store failures keep their meaning (503 from the app's handler); model failures are mapped. */
function asModelFailure(cause: unknown): never {
  if (isStoreError(cause)) throw cause;
  throw toModelAppError(cause, 'fine-tuning');
}
