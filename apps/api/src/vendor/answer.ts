// One vendor request from its body to its answer: read, validate in the vendor's order, detect,
// write. Pure CPU with no I/O, so it runs the same in the request's thread or in a detection
// thread (./threads.ts); the routes do everything else (auth, metering, the reply).
import { SeriesError } from '@adp/detection';
import type { VendorEngine } from './engine.js';
import { VendorError, type VendorErrorCode } from './errors.js';
import { NotScanned, ScannedBody, scanVendorBody } from './body-scan.js';
import { parseVendorRequest, type MessageStyle, type Operation, type ParsedRequest } from './request.js';
import { writeChangePointBody, writeEntireBody, writeLastBody } from './response.js';

export interface VendorAnswer {
  /** The success body: JSON bytes, or JSON text for the small last-point body. */
  readonly body: Buffer | string;
  /** Points in the request, for usage metering. */
  readonly points: number;
}

/** A refusal the client sees as a vendor error (a thread hands it back as plain data). */
export interface VendorRefusal {
  readonly code: VendorErrorCode;
  readonly message: string;
}

/** The body as JSON; an empty or malformed body is the vendor's 400. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === '') throw new VendorError('BadArgument', 'Invalid Json Format, input data is Empty.');
  try {
    // A leading byte-order mark is tolerated; JSON.parse would reject it.
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (error) {
    const detail = error instanceof Error ? ` ${error.message}` : '';
    throw new VendorError('InvalidJsonFormat', `Invalid Json Format, the request body is not valid JSON.${detail}`);
  }
}

/**
 * A request body's bytes as the validator takes them: a ScannedBody where the scanner read it
 * (./body-scan.ts), else the JSON value; an empty or malformed body is the vendor's 400.
 */
export function readJsonBody(raw: Buffer, engine: Pick<VendorEngine, 'parseIsoTimestamp'>): unknown {
  return scanVendorBody(raw, engine) ?? parseJsonText(raw.toString('utf8'));
}

/**
 * Validates a body (from readJsonBody, or any JSON value) in the vendor's order: the engine's input,
 * or a VendorError for the first rule that fails.
 */
export function parseVendorBody(engine: Pick<VendorEngine, 'parseIsoTimestamp'>, operation: Operation, body: unknown, style: MessageStyle): ParsedRequest {
  const context = { style, parseTimestamp: (text: string) => engine.parseIsoTimestamp(text) };
  if (!(body instanceof ScannedBody)) return parseVendorRequest(body, operation, context);
  try {
    return parseVendorRequest(body.fields, operation, context);
  } catch (error) {
    if (!(error instanceof NotScanned)) throw error;
  }
  // The validator needs what the scanner did not keep: the body's points as JSON.parse reads them.
  return parseVendorRequest(parseJsonText(body.raw.toString('utf8')), operation, context);
}

/** Validates a body (see parseVendorBody), runs the engine and writes the answer; VendorError or SeriesError for a bad request. */
export function answerVendorRequest(engine: VendorEngine, operation: Operation, body: unknown, style: MessageStyle): VendorAnswer {
  const parsed = parseVendorBody(engine, operation, body, style);
  const points = parsed.input.values.length;
  switch (parsed.operation) {
    case 'entire':
      return { body: writeEntireBody(engine.detectEntireSeries(parsed.input, parsed.options), points), points };
    case 'last':
      return { body: writeLastBody(engine.detectLastPoint(parsed.input, parsed.options)), points };
    case 'changepoint':
      return { body: writeChangePointBody(engine.detectChangePointSeries(parsed.input, parsed.options), points), points };
  }
}

/** The client-facing refusal of a bad request, or null for any other failure (a 500). */
export function refusalOf(error: unknown): VendorRefusal | null {
  if (error instanceof VendorError || error instanceof SeriesError) return { code: error.code, message: error.message };
  return null;
}
