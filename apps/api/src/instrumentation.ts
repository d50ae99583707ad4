// OpenTelemetry for the HTTP API: loaded before the app, so the SDK is global before any module
// creates a tracer or meter (settings and behaviour: @adp/observability):
//
//   tsx --import ./apps/api/src/instrumentation.ts apps/api/src/server.ts
//
// Without OTEL_* variables it starts nothing.
import { shutdownObservability, startObservability } from '@adp/observability';

startObservability('adp-api');

export { shutdownObservability };
