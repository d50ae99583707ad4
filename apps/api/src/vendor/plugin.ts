// The vendor-compatible routes: POST /anomalydetector/{version}/timeseries/{entire|last|changepoint}/detect.
// Everything here is scoped to this plugin (not wrapped in fastify-plugin): the JSON body parser,
// the error handler and the disabled schema validation never leak into the rest of the app.
import type {
  FastifyError,
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  RouteShorthandOptions,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { SeriesError, type ChangePointResult, type EntireResult, type LastResult } from '@adp/detection';
import type { VendorEndpoint, VendorRoutesOptions } from './contract.js';
import { detectionEngine, type VendorEngine } from './engine.js';
import { INTERNAL_ERROR_MESSAGE, VendorError, type VendorErrorBody } from './errors.js';
import {
  API_VERSIONS,
  OPERATIONS,
  messageStyleOf,
  parseVendorRequest,
  type ApiVersion,
  type Operation,
} from './request.js';
import {
  ChangePointDetectRequest,
  ChangePointDetectResponse,
  DetectRequest,
  LastDetectRequest,
  EntireDetectResponse,
  LastDetectResponse,
  VendorErrorResponse,
  VersionParams,
  type EntireDetectResponse as EntireBody,
  type LastDetectResponse as LastBody,
  type ChangePointDetectResponse as ChangePointBody,
} from './schemas.js';

export interface VendorPluginOptions extends VendorRoutesOptions {
  /** The detection engine behind the routes; tests swap it. Default: `@adp/detection`. */
  readonly engine?: VendorEngine;
}

const ROUTE_PREFIX = '/anomalydetector';
const TAGS = ['vendor-compatible'];

interface ResponseBody {
  readonly entire: EntireBody;
  readonly last: LastBody;
  readonly changepoint: ChangePointBody;
}

const USAGE_LABEL: Record<Operation, VendorEndpoint> = {
  entire: 'entire/detect',
  last: 'last/detect',
  changepoint: 'changepoint/detect',
};

/** Error statuses the routes answer with themselves. Other statuses (401, 429, ...) are the app's. */
const ERROR_RESPONSES = {
  400: VendorErrorResponse,
  404: VendorErrorResponse,
  413: VendorErrorResponse,
  415: VendorErrorResponse,
  500: VendorErrorResponse,
} as const;

const SUPPORTED_PATHS = `POST ${ROUTE_PREFIX}/{${API_VERSIONS.join('|')}}/timeseries/{${OPERATIONS.join('|')}}/detect`;

function isApiVersion(value: unknown): value is ApiVersion {
  return typeof value === 'string' && (API_VERSIONS as readonly string[]).includes(value);
}

/** The operation path segment, matched case-insensitively (old clients send `changePoint`). */
function resolveOperation(segment: unknown): Operation | undefined {
  if (typeof segment !== 'string') return undefined;
  const wanted = segment.toLowerCase();
  return OPERATIONS.find((operation) => operation === wanted);
}

function notFound(request: FastifyRequest): VendorError {
  const path = (request.url.split('?')[0] ?? '').slice(0, 200);
  return new VendorError('NotFound', `Resource not found: ${request.method} ${path}. This service answers ${SUPPORTED_PATHS}.`);
}

function routeParams(request: FastifyRequest): { version?: unknown; operation?: unknown } {
  return request.params as { version?: unknown; operation?: unknown };
}

/** Route-level onRequest: unknown versions are 404s before any body is read. */
async function requireKnownVersion(request: FastifyRequest): Promise<void> {
  if (!isApiVersion(routeParams(request).version)) throw notFound(request);
}

/** Route-level onRequest of the any-casing route: unknown operations are 404s too. */
async function requireKnownVersionAndOperation(request: FastifyRequest): Promise<void> {
  const params = routeParams(request);
  if (!isApiVersion(params.version) || resolveOperation(params.operation) === undefined) throw notFound(request);
}

const OPERATION_PATH = new RegExp(`^${ROUTE_PREFIX}/([^/]+)/timeseries/([^/]+)/detect$`);

/** Everything else under the prefix: a 405 on an operation's path (it answers POST only), else a 404. */
async function alwaysNotFound(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const path = request.url.split('?')[0] ?? '';
  const match = OPERATION_PATH.exec(path);
  if (match && isApiVersion(match[1]) && resolveOperation(match[2]) !== undefined) {
    reply.header('allow', 'POST');
    throw new VendorError('MethodNotAllowed', `${request.method} is not allowed on ${path.slice(0, 200)}; it answers POST.`);
  }
  throw notFound(request);
}

/** The body parser for `application/json` (any charset parameter) inside this plugin only. */
function parseJsonBody(_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.trim() === '') {
    done(new VendorError('BadArgument', 'Invalid Json Format, input data is Empty.'));
    return;
  }
  try {
    // A leading byte-order mark is tolerated; JSON.parse would reject it.
    done(null, JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
  } catch (error) {
    const detail = error instanceof Error ? ` ${error.message}` : '';
    done(new VendorError('InvalidJsonFormat', `Invalid Json Format, the request body is not valid JSON.${detail}`));
  }
}

function describeContentType(request: FastifyRequest): string {
  const header = request.headers['content-type'];
  return header === undefined ? 'none' : `'${header.slice(0, 100)}'`;
}

function isFastifyError(error: unknown): error is FastifyError {
  return error instanceof Error && typeof (error as Partial<FastifyError>).code === 'string';
}

/**
 * Maps an error to the vendor shape, or returns null when the error belongs to the app
 * (authentication, rate limiting, load shedding: anything with its own status that we did not raise).
 */
function toVendorError(error: unknown, request: FastifyRequest, bodyLimitBytes: number): VendorError | null {
  if (error instanceof VendorError) return error;
  if (error instanceof SeriesError) return new VendorError(error.code, error.message);
  if (isFastifyError(error) && error.code.startsWith('FST_ERR_CTP_')) {
    switch (error.code) {
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return new VendorError('PayloadTooLarge', `The request body exceeds the limit of ${bodyLimitBytes} bytes.`);
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return new VendorError(
          'UnsupportedMediaType',
          `The Content-Type must be 'application/json' (got ${describeContentType(request)}).`,
        );
      default:
        return new VendorError('BadArgument', `The request body could not be read: ${error.message}`);
    }
  }
  const statusCode = (error as { statusCode?: unknown } | null)?.statusCode;
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode !== 500) return null;
  return new VendorError('InternalServerError', INTERNAL_ERROR_MESSAGE);
}

function vendorErrorHandler(bodyLimitBytes: number) {
  return function handleVendorError(
    this: FastifyInstance,
    error: unknown,
    request: FastifyRequest,
    reply: FastifyReply,
  ): FastifyReply {
    const vendorError = toVendorError(error, request, bodyLimitBytes);
    // Throwing hands the error to the app's own error handler.
    if (vendorError === null) throw error;
    if (vendorError.statusCode >= 500) {
      request.log.error({ err: error }, 'vendor detection request failed unexpectedly');
    } else {
      request.log.info({ code: vendorError.code, message: vendorError.message }, 'vendor request rejected');
    }
    const body: VendorErrorBody = { code: vendorError.code, message: vendorError.message };
    return reply.code(vendorError.statusCode).header('x-ms-error-code', vendorError.code).send(body);
  };
}

/** Thrown when the engine breaks its result contract; the client sees a generic 500. */
function engineContractError(problem: string): Error {
  return new Error(`detection engine broke its result contract: ${problem}`);
}

// The bodies are serialised with JSON.stringify (see the serializer compiler below), which would
// quietly write NaN as null or pass a wrong type through; these checks keep the wire contract.
function checkNumbers(field: string, values: readonly number[], pointCount: number): void {
  if (values.length !== pointCount) throw engineContractError(`${values.length} ${field} for ${pointCount} points`);
  for (const value of values) {
    if (typeof value !== 'number' || !Number.isFinite(value)) throw engineContractError(`non-finite ${field}`);
  }
}

function checkBooleans(field: string, values: readonly boolean[], pointCount: number): void {
  if (values.length !== pointCount) throw engineContractError(`${values.length} ${field} for ${pointCount} points`);
  for (const value of values) {
    if (typeof value !== 'boolean') throw engineContractError(`non-boolean ${field}`);
  }
}

function checkScalar(field: string, value: unknown, kind: 'number' | 'integer' | 'boolean'): void {
  const ok =
    kind === 'boolean'
      ? typeof value === 'boolean'
      : typeof value === 'number' && (kind === 'integer' ? Number.isSafeInteger(value) : Number.isFinite(value));
  if (!ok) throw engineContractError(`${field} is not a finite ${kind}`);
}

function entireBody(result: EntireResult, pointCount: number): EntireBody {
  checkScalar('period', result.period, 'integer');
  checkNumbers('expectedValues', result.expectedValues, pointCount);
  checkNumbers('upperMargins', result.upperMargins, pointCount);
  checkNumbers('lowerMargins', result.lowerMargins, pointCount);
  checkBooleans('isAnomaly', result.isAnomaly, pointCount);
  checkBooleans('isNegativeAnomaly', result.isNegativeAnomaly, pointCount);
  checkBooleans('isPositiveAnomaly', result.isPositiveAnomaly, pointCount);
  checkNumbers('severity', result.severity, pointCount);
  // Built field by field: nothing the engine adds can leak onto the wire.
  return {
    period: result.period,
    expectedValues: result.expectedValues,
    upperMargins: result.upperMargins,
    lowerMargins: result.lowerMargins,
    isAnomaly: result.isAnomaly,
    isNegativeAnomaly: result.isNegativeAnomaly,
    isPositiveAnomaly: result.isPositiveAnomaly,
    severity: result.severity,
  };
}

function lastBody(result: LastResult): LastBody {
  checkScalar('period', result.period, 'integer');
  checkScalar('suggestedWindow', result.suggestedWindow, 'integer');
  checkScalar('expectedValue', result.expectedValue, 'number');
  checkScalar('upperMargin', result.upperMargin, 'number');
  checkScalar('lowerMargin', result.lowerMargin, 'number');
  checkScalar('isAnomaly', result.isAnomaly, 'boolean');
  checkScalar('isNegativeAnomaly', result.isNegativeAnomaly, 'boolean');
  checkScalar('isPositiveAnomaly', result.isPositiveAnomaly, 'boolean');
  checkScalar('severity', result.severity, 'number');
  return {
    period: result.period,
    suggestedWindow: result.suggestedWindow,
    expectedValue: result.expectedValue,
    upperMargin: result.upperMargin,
    lowerMargin: result.lowerMargin,
    isAnomaly: result.isAnomaly,
    isNegativeAnomaly: result.isNegativeAnomaly,
    isPositiveAnomaly: result.isPositiveAnomaly,
    severity: result.severity,
  };
}

function changePointBody(result: ChangePointResult, pointCount: number): ChangePointBody {
  checkScalar('period', result.period, 'integer');
  checkBooleans('isChangePoint', result.isChangePoint, pointCount);
  checkNumbers('confidenceScores', result.confidenceScores, pointCount);
  return { period: result.period, isChangePoint: result.isChangePoint, confidenceScores: result.confidenceScores };
}

export const vendorRoutes: FastifyPluginAsync<VendorPluginOptions> = async (fastify, options) => {
  const engine = options.engine ?? detectionEngine;
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  // The one place that keeps a hand parser: the vendor's clients expect its validation order (the
  // first failing rule answers), its codes per field and its exact messages, keys matched
  // case-insensitively. A JSON schema validator gives none of these, so ./request.ts validates the
  // bodies and the route schemas only document them (the platform's routes use ../schema-validation.ts).
  app.setValidatorCompiler(() => () => true);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: options.bodyLimitBytes }, parseJsonBody);
  app.setErrorHandler(vendorErrorHandler(options.bodyLimitBytes));
  // A child plugin's onClose runs before the app's, which closes the store these counts go to.
  const { drain } = options;
  if (drain !== undefined) app.addHook('onClose', async () => drain());
  // Every body these routes send is built field by field and checked above, so the schema's only
  // remaining job would be speed, and for 8,640-element number arrays V8's JSON.stringify is about
  // twice as fast as the generated schema serialiser. The schemas still document the responses.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  async function detect<O extends Operation>(operation: O, request: FastifyRequest): Promise<ResponseBody[O]> {
    // Fastify skips the body parser when there is neither a body nor a Content-Type.
    if (request.body === undefined && request.headers['content-type'] === undefined) {
      throw new VendorError('UnsupportedMediaType', "The Content-Type must be 'application/json' (got none).");
    }
    const version = routeParams(request).version as ApiVersion; // checked in onRequest
    const parsed = parseVendorRequest(request.body, operation, {
      style: messageStyleOf(version),
      parseTimestamp: (text) => engine.parseIsoTimestamp(text),
    });
    const pointCount = parsed.input.values.length;
    let body: ResponseBody[Operation];
    switch (parsed.operation) {
      case 'entire':
        body = entireBody(engine.detectEntireSeries(parsed.input, parsed.options), pointCount);
        break;
      case 'last':
        body = lastBody(engine.detectLastPoint(parsed.input, parsed.options));
        break;
      case 'changepoint':
        body = changePointBody(engine.detectChangePointSeries(parsed.input, parsed.options), pointCount);
        break;
    }
    await options.onDetected(request, USAGE_LABEL[operation], pointCount);
    // parseVendorRequest answers for the operation it was given, so the body is ResponseBody[O].
    return body as ResponseBody[O];
  }

  const common = {
    bodyLimit: options.bodyLimitBytes,
    onRequest: requireKnownVersion,
  } satisfies RouteShorthandOptions;

  app.post(
    `${ROUTE_PREFIX}/:version/timeseries/entire/detect`,
    {
      ...common,
      schema: {
        tags: TAGS,
        operationId: 'vendorDetectEntireSeries',
        summary: 'Detect anomalies for the entire series in batch (vendor-compatible).',
        params: VersionParams,
        body: DetectRequest,
        response: { 200: EntireDetectResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => detect('entire', request),
  );

  app.post(
    `${ROUTE_PREFIX}/:version/timeseries/last/detect`,
    {
      ...common,
      schema: {
        tags: TAGS,
        operationId: 'vendorDetectLastPoint',
        summary: 'Detect the anomaly status of the latest point (vendor-compatible).',
        params: VersionParams,
        body: LastDetectRequest,
        response: { 200: LastDetectResponse, ...ERROR_RESPONSES },
      },
    },
    async (request) => detect('last', request),
  );

  const changePointSchema = {
    tags: TAGS,
    summary: 'Detect change points for the entire series (vendor-compatible).',
    params: VersionParams,
    body: ChangePointDetectRequest,
    response: { 200: ChangePointDetectResponse, ...ERROR_RESPONSES },
  } as const;
  app.post(
    `${ROUTE_PREFIX}/:version/timeseries/changepoint/detect`,
    { ...common, schema: { ...changePointSchema, operationId: 'vendorDetectChangePoint' } },
    async (request) => detect('changepoint', request),
  );
  // The spelling of @azure/cognitiveservices-anomalydetector 2.x and early Python clients.
  app.post(
    `${ROUTE_PREFIX}/:version/timeseries/changePoint/detect`,
    { ...common, schema: { ...changePointSchema, hide: true } },
    async (request) => detect('changepoint', request),
  );

  // Any other casing of the operation segment. Static routes above win over this parametric
  // one. Registered without the type provider and without a 200 schema: its body depends on the
  // operation (the serialiser is the same, so the bytes are too).
  fastify.post(
    `${ROUTE_PREFIX}/:version/timeseries/:operation/detect`,
    {
      bodyLimit: options.bodyLimitBytes,
      onRequest: requireKnownVersionAndOperation,
      schema: { hide: true, response: ERROR_RESPONSES },
    },
    async (request) => {
      const operation = resolveOperation(routeParams(request).operation);
      if (operation === undefined) throw notFound(request);
      return detect(operation, request);
    },
  );

  // Everything else under the prefix: a vendor-shaped 404, answered before any body is read.
  for (const path of [ROUTE_PREFIX, `${ROUTE_PREFIX}/*`]) {
    app.all(
      path,
      { exposeHeadRoute: false, onRequest: alwaysNotFound, schema: { hide: true, response: ERROR_RESPONSES } },
      async () => {
        throw new Error('unreachable: onRequest answers every request on this route');
      },
    );
  }
};
