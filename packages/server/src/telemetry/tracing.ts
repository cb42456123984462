// OpenTelemetry traces, off unless an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
// BURROW_OTLP_ENDPOINT, resolved in config.ts). On, it registers the process-wide tracer provider, an
// AsyncLocalStorage context manager and the W3C trace-context propagator, so that spans started anywhere in the
// process through @opentelemetry/api (the REST handler here, the orchestrator's create steps, the bus) join the
// request's trace; spans go out in batches over OTLP/HTTP (JSON). Off, @opentelemetry/api's no-op tracer is all
// that runs.
import { context, propagation, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import type { Logger } from "pino";

export interface TracingOptions {
  /** The collector's base URL; spans are POSTed to `<endpoint>/v1/traces`, as the OTLP spec says for this variable. */
  endpoint: string;
  serviceName: string;
  logger: Logger;
}

export interface Tracing {
  /** Export what is pending and unregister the provider. */
  close(): Promise<void>;
}

/** How long spans wait to be sent with others. */
const EXPORT_DELAY_MS = 1000;

export function startTracing(opts: TracingOptions): Tracing {
  const url = `${opts.endpoint.replace(/\/+$/, "")}/v1/traces`;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": opts.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url }), { scheduledDelayMillis: EXPORT_DELAY_MS })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  opts.logger.info({ url }, "exporting traces over OTLP/HTTP");
  return {
    async close() {
      try {
        await provider.shutdown();
      } catch (err) {
        opts.logger.warn({ err }, "could not export the last spans");
      }
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
