// Trace context across the bus. Shared code talks only to @opentelemetry/api: until an app's
// instrumentation.ts registers the SDK (tracer provider, context manager, W3C propagator) every
// call here is a cheap no-op, so libraries and unit tests need no telemetry setup.
import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Context, SpanKind } from '@opentelemetry/api';

/** Instrumentation scope of every span this package starts. */
export const TRACER_NAME = '@adp/streaming';

/** Attribute values `inSpan` accepts (the scalar subset of OpenTelemetry attribute values). */
export type SpanAttributes = Readonly<Record<string, string | number | boolean>>;

/**
 * The W3C `traceparent` / `tracestate` of the active context, for message headers. Empty when no
 * span is active or no propagator is registered (the API's default propagator injects nothing).
 */
export function traceHeaders(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/**
 * Runs `fn` inside a new active span named `name`. With `parentHeaders` (a consumed message's
 * headers) the span is a child of the trace they carry; headers without trace context fall back
 * to the active context, so a per-message span still nests under its batch span. A rejection is
 * recorded on the span (exception event, ERROR status) and rethrown; the span always ends.
 * `kind` defaults to INTERNAL; pass PRODUCER / CONSUMER on the bus edges so trace views draw them.
 */
export async function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: () => Promise<T>,
  parentHeaders?: Readonly<Record<string, string>>,
  kind?: SpanKind,
): Promise<T> {
  const active = context.active();
  const parent: Context = parentHeaders === undefined ? active : propagation.extract(active, parentHeaders);
  const tracer = trace.getTracer(TRACER_NAME);
  return tracer.startActiveSpan(name, { attributes, kind }, parent, async (span) => {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof Error) {
        span.recordException(err);
        span.setStatus({ code: SpanStatusCode.ERROR, message: err.message });
      } else {
        span.recordException(String(err));
        span.setStatus({ code: SpanStatusCode.ERROR, message: String(err) });
      }
      throw err;
    } finally {
      span.end();
    }
  });
}
