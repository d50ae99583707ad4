// One vendor request from its body text to its answer text: parse, validate in the vendor's order,
// detect, write. Pure CPU with no I/O, so it runs the same in the request's thread or in a
// detection thread (./threads.ts); the routes do everything else (auth, metering, the reply).
import { SeriesError } from '@adp/detection';
import type { VendorEngine } from './engine.js';
import { VendorError, type VendorErrorCode } from './errors.js';
import { parseVendorRequest, type MessageStyle, type Operation } from './request.js';
import { writeChangePointBody, writeEntireBody, writeLastBody } from './response.js';

export interface VendorAnswer {
  /** The success body as JSON text. */
  readonly body: string;
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

/** Validates a parsed body, runs the engine and writes the answer; VendorError or SeriesError for a bad request. */
export function answerVendorRequest(engine: VendorEngine, operation: Operation, body: unknown, style: MessageStyle): VendorAnswer {
  const parsed = parseVendorRequest(body, operation, {
    style,
    parseTimestamp: (text) => engine.parseIsoTimestamp(text),
  });
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
