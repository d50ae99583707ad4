// Test support, imported as `@adp/streaming/testing` by test files only (never by the apps): an
// in-memory OpenTelemetry setup wired the way apps' instrumentation wires the real SDK (tracer
// provider, async context, W3C propagator), so tests can check the spans that inSpan and
// traceHeaders produce across the bus.
import { AsyncLocalStorage } from 'node:async_hooks';
import { context, propagation, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import type { Context, ContextManager } from '@opentelemetry/api';
import { core } from '@opentelemetry/sdk-node';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { ResultRow } from './ports.js';

/** The AsyncLocalStorage context manager of @opentelemetry/context-async-hooks, without the dependency. */
export class AsyncLocalStorageContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();
  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(
    ctx: Context,
    fn: F,
    thisArg?: ThisParameterType<F>,
    ...args: A
  ): ReturnType<F> {
    return this.storage.run(ctx, () => fn.call(thisArg, ...args) as ReturnType<F>);
  }
  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== 'function') return target;
    const run = (...args: unknown[]): unknown => this.with(ctx, () => (target as (...a: unknown[]) => unknown)(...args));
    return run as T;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    this.storage.disable();
    return this;
  }
}

export interface InMemoryTracing {
  readonly exporter: InMemorySpanExporter;
  /** The one finished span of that name; throws when there are none or several. */
  span(name: string): ReadableSpan;
  /** Shuts the provider down and puts the global API back to its no-op state. */
  uninstall(): Promise<void>;
}

/** Registers an in-memory tracer provider, the async context manager and the W3C propagator globally. */
export function installInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager());
  propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return {
    exporter,
    span(name) {
      const found = exporter.getFinishedSpans().filter((span) => span.name === name);
      if (found.length !== 1) throw new Error(`expected one finished span '${name}', found ${found.length}`);
      return found[0] as ReadableSpan;
    },
    async uninstall() {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}

/**
 * A result row for tests: the point's identity, everything else a quiet default (value 1 within
 * ±0.5, no anomaly, no energy, UNKNOWN regime), any field overridden.
 */
export function resultRow(fields: Pick<ResultRow, 'orgId' | 'machineId' | 'tsMs'> & Partial<ResultRow>): ResultRow {
  return {
    value: 1,
    expectedValue: 1,
    upperMargin: 0.5,
    lowerMargin: 0.5,
    isAnomaly: false,
    isPositiveAnomaly: false,
    isNegativeAnomaly: false,
    severity: 0,
    energy: null,
    zScore: null,
    regime: 'UNKNOWN',
    modelVersion: 'engine-test',
    writtenAtMs: 1,
    ...fields,
  };
}
