// OpenTelemetry for the streaming worker: loaded before the app, so the SDK is global before any module
// creates a tracer or meter (settings and behaviour: @adp/observability):
//
//   tsx --import ./apps/worker/src/instrumentation.ts apps/worker/src/main.ts
//
// Without OTEL_* variables it starts nothing.
import { shutdownObservability, startObservability } from '@adp/observability';

startObservability('adp-worker');

export { shutdownObservability };
