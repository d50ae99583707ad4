// OpenTelemetry for the API process. Load it before the app, so the SDK is global before any
// module creates a tracer or meter:
//
//   tsx --import ./apps/api/src/instrumentation.ts apps/api/src/server.ts
//
// It is the one place besides config.ts that reads the environment, and only the standard OTEL_*
// variables, which the SDK itself interprets (exporter, endpoint, protocol, sampler, resource
// attributes, batch delays). With none of the variables below set it does nothing at all: shared
// code keeps talking to the no-op API and `npm start` needs no collector.
//
//   OTEL_EXPORTER_OTLP_ENDPOINT   e.g. http://otel-collector:4318 (OTLP over HTTP, protobuf by
//                                 default; OTEL_EXPORTER_OTLP_PROTOCOL=http/json or grpc to change)
//   OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT, OTEL_{TRACES,METRICS}_EXPORTER (otlp, console,
//                                 none; metrics also prometheus)
//   OTEL_SERVICE_NAME             overrides the default service name, adp-api
//   OTEL_SDK_DISABLED=true        turns everything off whatever else is set
//
// Trace context travels as W3C traceparent/tracestate (plus baggage) unless OTEL_PROPAGATORS says
// otherwise. No auto-instrumentation: the spans are the ones the code starts itself through
// @adp/streaming's inSpan (HTTP handler, produce, consume, ClickHouse insert).
import process from 'node:process';
import { core, NodeSDK } from '@opentelemetry/sdk-node';

const DEFAULT_SERVICE_NAME = 'adp-api';

/** Any of these, non-empty, asks for telemetry. */
const ENABLING_VARIABLES = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_METRICS_ENDPOINT',
  'OTEL_TRACES_EXPORTER',
  'OTEL_METRICS_EXPORTER',
] as const;

function set(name: string): boolean {
  const value = process.env[name];
  return value !== undefined && value.trim() !== '';
}

const disabled = process.env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true';

let stopping: Promise<void> | undefined;
let stop: () => Promise<void> = async () => {};

/**
 * Exports what is buffered and stops the SDK; a no-op when telemetry is off, and safe to call
 * twice. The process calls it last, after closing the server and before `process.exit`, so the
 * spans of the shutdown itself are exported too.
 */
export function shutdownTelemetry(): Promise<void> {
  stopping ??= stop().catch(() => undefined);
  return stopping;
}

if (!disabled && ENABLING_VARIABLES.some(set)) {
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME, read by the SDK's environment detector, wins over the default.
    ...(set('OTEL_SERVICE_NAME') ? {} : { serviceName: DEFAULT_SERVICE_NAME }),
    // W3C trace context and baggage; OTEL_PROPAGATORS, when set, is honoured instead.
    ...(set('OTEL_PROPAGATORS')
      ? {}
      : {
          textMapPropagator: new core.CompositePropagator({
            propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
          }),
        }),
  });
  sdk.start();
  stop = () => sdk.shutdown();

  // A process with its own SIGTERM/SIGINT handler is expected to call shutdownTelemetry() before
  // it exits (until it does, spans are still exported every OTEL_BSP_SCHEDULE_DELAY). Without one,
  // flush here and re-raise the signal, so its default action still ends the process.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (process.listenerCount(signal) > 0) return;
    void shutdownTelemetry().finally(() => process.kill(process.pid, signal));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  // A process that ends on its own (an empty event loop) exports its last spans first.
  process.once('beforeExit', () => void shutdownTelemetry());
}
