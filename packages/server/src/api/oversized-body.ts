// A body declared larger than the API accepts is answered 413 only after the client has finished sending it.
// Fastify answers at once and closes the connection; the client, still uploading, then often sees the close
// (EPIPE, a reset) instead of the 413, and a strict client (Python's httpx) reports a network error. Reading
// and discarding a moderately oversized body costs little; a huge one is still refused at once and closed.
import type { FastifyInstance } from "fastify";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route reads its body as a stream with a limit of its own (uploads, file contents). */
    streamedBody?: boolean;
  }
}

/** Declared sizes up to this many times the limit are read and discarded before the 413. */
const DRAIN_FACTOR = 16;

export function registerOversizedBodyGuard(app: FastifyInstance, bodyLimitBytes: number): void {
  app.addHook("onRequest", async (request, reply) => {
    if (request.routeOptions.config.streamedBody) return;
    const declared = Number(request.headers["content-length"]);
    if (!Number.isFinite(declared) || declared <= bodyLimitBytes) return;
    const message = `request body of ${declared} bytes is larger than the server's limit of ${bodyLimitBytes} bytes`;
    if (declared <= bodyLimitBytes * DRAIN_FACTOR) {
      const raw = request.raw;
      await new Promise<void>((resolve) => {
        raw.once("end", resolve);
        raw.once("error", () => resolve());
        raw.once("close", () => resolve());
        raw.resume();
      });
    } else {
      reply.header("connection", "close");
    }
    return reply.code(413).type("application/json").send({ code: 413, message });
  });
}
