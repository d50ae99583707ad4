// The OpenTelemetry SDK setup that the apps load before anything else (apps/api and apps/worker,
// each through its own src/instrumentation.ts, with `--import`), so the SDK is global before any
// module creates a tracer or meter. Libraries never import this package: they talk to
// @opentelemetry/api only, which stays a no-op until an app has started the SDK here.
//
// Only the standard OTEL_* variables are read, and the SDK interprets them itself (exporter,
// endpoint, protocol, sampler, resource attributes, batch delays). With none of the variables
// below set nothing starts: shared code keeps talking to the no-op API and `npm start` needs no
// collector.
//
//   OTEL_EXPORTER_OTLP_ENDPOINT   e.g. http://otel-collector:4318 (OTLP over HTTP, protobuf by
//                                 default; OTEL_EXPORTER_OTLP_PROTOCOL=http/json or grpc to change)
//   OTEL_EXPORTER_OTLP_{TRACES,METRICS}_ENDPOINT, OTEL_{TRACES,METRICS}_EXPORTER (otlp, console,
//                                 none; metrics also prometheus)
//   OTEL_SERVICE_NAME             overrides the app's default service name
//   OTEL_SDK_DISABLED=true        turns everything off whatever else is set
//
// Trace context travels as W3C traceparent/tracestate (plus baggage) unless OTEL_PROPAGATORS says
// otherwise. No auto-instrumentation: the spans are the ones the code starts itself through
// @adp/streaming's inSpan (HTTP handler, produce, consume, ClickHouse insert).
import process from 'node:process';
import { core, NodeSDK } from '@opentelemetry/sdk-node';

/** Any of these, non-empty, asks for traces and metrics. */
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

let started = false;
let stopping: Promise<void> | undefined;
let stop: () => Promise<void> = async () => {};

/**
 * Exports what is buffered and stops the SDK; a no-op when the SDK is off, and safe to call
 * twice. The process calls it last, after closing its server or draining its consumer and before
 * `process.exit`, so the spans of the shutdown itself are exported too.
 */
export function shutdownObservability(): Promise<void> {
  stopping ??= stop().catch(() => undefined);
  return stopping;
}

/**
 * Starts the SDK when an OTEL_* variable above asks for it (once per process; later calls do
 * nothing). `defaultServiceName` applies unless OTEL_SERVICE_NAME is set.
 */
export function startObservability(defaultServiceName: string): void {
  if (started) return;
  started = true;
  const disabled = process.env['OTEL_SDK_DISABLED']?.trim().toLowerCase() === 'true';
  if (disabled || !ENABLING_VARIABLES.some(set)) return;
  const sdk = new NodeSDK({
    // OTEL_SERVICE_NAME, read by the SDK's environment detector, wins over the default.
    ...(set('OTEL_SERVICE_NAME') ? {} : { serviceName: defaultServiceName }),
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

  // A process with its own SIGTERM/SIGINT handler is expected to call shutdownObservability() before
  // it exits (until it does, spans are still exported every OTEL_BSP_SCHEDULE_DELAY). Without one,
  // flush here and re-raise the signal, so its default action still ends the process.
  const onSignal = (signal: NodeJS.Signals): void => {
    if (process.listenerCount(signal) > 0) return;
    void shutdownObservability().finally(() => process.kill(process.pid, signal));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  // A process that ends on its own (an empty event loop) exports its last spans first.
  process.once('beforeExit', () => void shutdownObservability());
}
