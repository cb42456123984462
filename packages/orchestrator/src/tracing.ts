// Spans for the orchestrator's steps, through @opentelemetry/api alone: the process that embeds the orchestrator
// decides whether anything is recorded (the server registers a tracer provider when an OTLP endpoint is set);
// without one these are no-ops.
import { SpanStatusCode, trace, type Attributes } from "@opentelemetry/api";

/** Run `fn` in a span named `name` (a child of the active one); the span ends when it settles, marked on failure. */
export function inSpan<T>(name: string, fn: () => Promise<T>, attributes?: Attributes): Promise<T> {
  // Looked up per span, not once: @opentelemetry/api's proxy tracer keeps the first provider it saw, and an embedding
  // process may register another one later (a server restarted in the same process).
  return trace.getTracer("burrow-orchestrator").startActiveSpan(name, attributes ? { attributes } : {}, async (span) => {
    try {
      return await fn();
    } catch (error) {
      span.recordException(error as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  });
}
