import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-node';

/** A registered OpenTelemetry SDK; `shutdown` flushes and unregisters it. */
export interface TracingHandle {
  readonly provider: NodeTracerProvider;
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  readonly serviceName: string;
  /** An explicit exporter (tests, benchmarks: in-memory or no-op), exported span by span. */
  readonly exporter?: SpanExporter;
  /** OTEL_EXPORTER_OTLP_ENDPOINT (or the traces-specific variable); batched OTLP/HTTP export. */
  readonly otlpEndpoint?: string;
}

let active: TracingHandle | null = null;

/**
 * Installs the OpenTelemetry SDK for this process (plan §19): a NodeTracerProvider with the
 * AsyncLocalStorage context manager, exporting over OTLP/HTTP (batched) or to an explicit
 * exporter. Called only from the composition root, and only when an endpoint or exporter is
 * given: otherwise nothing is installed and `@opentelemetry/api` stays its no-op.
 */
export function startTracing(opts: TracingOptions): TracingHandle {
  if (active) return active;
  const processors = [];
  if (opts.exporter) processors.push(new SimpleSpanProcessor(opts.exporter));
  // The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT / _TRACES_ENDPOINT / _HEADERS itself (/v1/traces appended).
  if (opts.otlpEndpoint) processors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName, 'service.namespace': 'agent-core' }),
    spanProcessors: processors,
  });
  provider.register();
  const handle: TracingHandle = {
    provider,
    async shutdown() {
      if (active !== handle) return;
      active = null;
      await provider.shutdown().catch(() => undefined);
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
  active = handle;
  return handle;
}

/** The endpoint that turns tracing on, from the standard OpenTelemetry variables; null when unset. */
export function otlpEndpointFrom(env: NodeJS.ProcessEnv): string | null {
  const v = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  return v ? v : null;
}

/** The SDK installed in this process, if any. */
export function activeTracing(): TracingHandle | null {
  return active;
}
