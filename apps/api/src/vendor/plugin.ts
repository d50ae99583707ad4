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
import { SeriesError } from '@adp/detection';
import type { VendorEndpoint, VendorRoutesOptions } from './contract.js';
import { detectionEngine, type VendorEngine } from './engine.js';
import { INTERNAL_ERROR_MESSAGE, VendorError, type VendorErrorBody } from './errors.js';
import {
  API_VERSIONS,
  OPERATIONS,
  messageStyleOf,
  type ApiVersion,
  type Operation,
} from './request.js';
import { answerVendorRequest, readJsonBody, type VendorAnswer } from './answer.js';
import { vendorThreads } from './threads.js';
import {
  ChangePointDetectRequest,
  ChangePointDetectResponse,
  DetectRequest,
  LastDetectRequest,
  EntireDetectResponse,
  LastDetectResponse,
  VendorErrorResponse,
  VersionParams,
} from './schemas.js';

export interface VendorPluginOptions extends VendorRoutesOptions {
  /**
   * The detection engine behind the routes; tests swap it. Default: `@adp/detection`. A swapped
   * engine runs on the event loop (detection threads load the real one).
   */
  readonly engine?: VendorEngine;
  /**
   * Threads that parse, validate and detect (VENDOR_DETECTION_THREADS); 0 or absent: all of it on
   * the event loop. The routes start and close them.
   */
  readonly detectionThreads?: number;
}

const ROUTE_PREFIX = '/anomalydetector';
const TAGS = ['vendor-compatible'];
/** What Fastify's serialiser would have sent the JSON bodies with. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

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

/**
 * A body left as bytes for a detection thread to read (VENDOR_DETECTION_THREADS): reading an
 * 8,640-point body is a share of a request, and it runs there with the rest of the detection.
 */
class UnreadBody {
  constructor(readonly raw: Buffer) {}
}

/** Whether a body goes to a detection thread: `threadsReady` now, `othersInFlight` when it is decided. */
interface HandOff {
  readonly threadsReady: () => boolean;
  readonly othersInFlight: () => boolean;
}

/** Whether the body's text is empty once trimmed (String.prototype.trim's whitespace). */
function isBlank(raw: Buffer): boolean {
  for (let at = 0; at < raw.length; at++) {
    const byte = raw[at]!;
    if (byte === 0x20 || (byte >= 0x09 && byte <= 0x0d)) continue;
    // Trim also takes non-ASCII spaces (a byte-order mark, a no-break space): the text decides.
    return byte < 0x80 ? false : raw.toString('utf8').trim() === '';
  }
  return true;
}

/** The body parser for `application/json` (any charset parameter) inside this plugin only. */
function jsonBodyParser(handOff: HandOff, engine: VendorEngine) {
  return function parseJsonBody(_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void {
    const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    const finish = (leaveToThreads: boolean): void => {
      let read: unknown;
      try {
        read = leaveToThreads ? new UnreadBody(raw) : readJsonBody(raw, engine);
      } catch (error) {
        done(error as Error);
        return;
      }
      done(null, read);
    };
    // An empty body is refused at once in both cases, before anything else is checked.
    if (!handOff.threadsReady() || isBlank(raw)) {
      finish(false);
      return;
    }
    // The event loop reads the sockets that are ready one after the other, and a request answered
    // in place runs to its end before the next socket is read; so whether others are in flight is
    // asked after the current round of reads, once every request that arrived with this one counts.
    setImmediate(() => finish(handOff.othersInFlight()));
  };
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

export const vendorRoutes: FastifyPluginAsync<VendorPluginOptions> = async (fastify, options) => {
  const engine = options.engine ?? detectionEngine;
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const threadCount = options.engine === undefined ? (options.detectionThreads ?? 0) : 0;
  const threads =
    threadCount > 0
      ? vendorThreads(threadCount, (error) => fastify.log.error({ err: error }, 'vendor detection threads failed to start; detecting on the event loop'))
      : null;
  // A listening server starts them at once, so that its first requests do not share the CPU with
  // the threads' start; an app that only takes injected requests (tests) starts them on its first
  // vendor request.
  if (threads !== null) fastify.server.once('listening', () => threads.start());
  // Detection requests between their headers and their answer's end: a body is handed to a thread
  // only while another one is in flight, so a lone request never pays for the hand-off.
  let inFlight = 0;
  function countInFlight(_request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    inFlight++;
    reply.raw.once('close', () => {
      inFlight--;
    });
    threads?.start();
    done();
  }

  // The one place that keeps a hand parser: the vendor's clients expect its validation order (the
  // first failing rule answers), its codes per field and its exact messages, keys matched
  // case-insensitively. A JSON schema validator gives none of these, so ./request.ts validates the
  // bodies and the route schemas only document them (the platform's routes use ../schema-validation.ts).
  app.setValidatorCompiler(() => () => true);
  app.removeAllContentTypeParsers();
  // The body stays bytes: ./body-scan.ts reads the usual bodies from them without JSON.parse.
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: options.bodyLimitBytes },
    jsonBodyParser({ threadsReady: () => threads?.ready === true, othersInFlight: () => inFlight > 1 }, engine),
  );
  app.setErrorHandler(vendorErrorHandler(options.bodyLimitBytes));
  // A child plugin's onClose runs before the app's, which closes the store these counts go to.
  const { drain } = options;
  app.addHook('onClose', async () => {
    await threads?.close();
    await drain?.();
  });
  // Success bodies are written as text by ./response.ts (checked against the contract in the same
  // pass), so a serialiser only sees the small error bodies, built field by field in the error
  // handler. The schemas still document the responses.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  async function detect(operation: Operation, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    // Fastify skips the body parser when there is neither a body nor a Content-Type.
    if (request.body === undefined && request.headers['content-type'] === undefined) {
      throw new VendorError('UnsupportedMediaType', "The Content-Type must be 'application/json' (got none).");
    }
    const style = messageStyleOf(routeParams(request).version as ApiVersion); // checked in onRequest
    const { body } = request;
    const answer: VendorAnswer =
      threads !== null && body instanceof UnreadBody
        ? await threads.answer({ body: body.raw, operation, style })
        : answerVendorRequest(engine, operation, body, style);
    await options.onDetected(request, USAGE_LABEL[operation], answer.points);
    // Bytes, or a string with a JSON content type, go out as they are, past the serialiser.
    return reply.type(JSON_CONTENT_TYPE).send(answer.body);
  }

  const common = {
    bodyLimit: options.bodyLimitBytes,
    onRequest: [requireKnownVersion, countInFlight],
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
    async (request, reply) => detect('entire', request, reply),
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
    async (request, reply) => detect('last', request, reply),
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
    async (request, reply) => detect('changepoint', request, reply),
  );
  // The spelling of @azure/cognitiveservices-anomalydetector 2.x and early Python clients.
  app.post(
    `${ROUTE_PREFIX}/:version/timeseries/changePoint/detect`,
    { ...common, schema: { ...changePointSchema, hide: true } },
    async (request, reply) => detect('changepoint', request, reply),
  );

  // Any other casing of the operation segment. Static routes above win over this parametric
  // one. Registered without the type provider and without a 200 schema: its body depends on the
  // operation (the serialiser is the same, so the bytes are too).
  fastify.post(
    `${ROUTE_PREFIX}/:version/timeseries/:operation/detect`,
    {
      bodyLimit: options.bodyLimitBytes,
      onRequest: [requireKnownVersionAndOperation, countInFlight],
      schema: { hide: true, response: ERROR_RESPONSES },
    },
    async (request, reply) => {
      const operation = resolveOperation(routeParams(request).operation);
      if (operation === undefined) throw notFound(request);
      return detect(operation, request, reply);
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
