// A SERVER span per REST request, continuing the caller's trace when it sends W3C `traceparent`, and made the
// active context for the handler so that what the handler calls (lifecycle, orchestrator) nests under it.
import { SpanKind, SpanStatusCode, context, propagation, trace, type Span } from "@opentelemetry/api";
import type { FastifyInstance, FastifyRequest } from "fastify";

const spans = new WeakMap<FastifyRequest, Span>();

export function registerRestSpans(app: FastifyInstance): void {
  app.addHook("onRequest", (request, _reply, done) => {
    const parent = propagation.extract(context.active(), request.headers);
    const route = request.routeOptions.url ?? "unmatched";
    // Per request: the API's proxy tracer would keep the first provider, and a server may be started again in-process.
    const span = trace.getTracer("burrow-server").startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { "http.request.method": request.method, "http.route": route } },
      parent,
    );
    spans.set(request, span);
    // Everything after this hook (auth, handler, serialization) runs in the span's context.
    context.with(trace.setSpan(parent, span), done);
  });
  app.addHook("onError", (request, _reply, error, done) => {
    spans.get(request)?.recordException(error);
    done();
  });
  app.addHook("onResponse", (request, reply, done) => {
    const span = spans.get(request);
    if (span) {
      span.setAttribute("http.response.status_code", reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      spans.delete(request);
    }
    done();
  });
}
