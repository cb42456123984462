// The gateway's request path: read the caller's request (the providers' own APIs), check budgets, try providers in
// order (failing over on connection errors, timeouts, 429 and 5xx while nothing has been sent back), then stream the
// chosen provider's answer through unchanged, metering its usage as it passes.
//
// Failover stops at the first byte sent to the caller: after that the caller's SDK has started consuming one
// provider's answer (ids, partial text) and a second provider's answer cannot be spliced in without it seeing a
// different completion. A provider that breaks off mid-stream ends the stream with an error event instead.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { BudgetCounters } from "./budgets.js";
import type { CircuitBreakers } from "./circuit-breaker.js";
import type { GatewaySettings } from "./gateway-settings.js";
import type { ProviderKind } from "./provider-config.js";
import { midStreamErrorEvent, sendProviderError } from "./provider-errors.js";
import { candidateOrder } from "./provider-order.js";
import type { ProviderRegistry } from "./provider-registry.js";
import { attemptUpstream, upstreamHeaders, upstreamUrl, type AttemptResult, type UpstreamAgents } from "./upstream-attempt.js";
import type { UsageBuffer } from "./usage-buffer.js";
import { UsageMeter } from "./usage-meter.js";

/** Who is calling: a sandbox (by its address) with its creating key, or a host client with its API key. */
export interface ModelCaller {
  sandboxId: string | null;
  apiKeyId: number | null;
}

const MAX_REQUEST_BYTES = 32 * 1024 * 1024;

interface BudgetSubject {
  subject: string;
  budget: GatewaySettings["keyBudget"];
  label: string;
}

/** Response headers not passed on: hop-by-hop ones (Node frames the answer itself). */
const DROPPED_RESPONSE_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "trailer"]);

const ROUTES: Readonly<Record<string, ProviderKind>> = {
  "POST /v1/chat/completions": "openai",
  "POST /v1/completions": "openai",
  "POST /v1/embeddings": "openai",
  "POST /v1/messages": "anthropic",
};

export interface ModelProxyDeps {
  providers: ProviderRegistry;
  usage: UsageBuffer;
  breakers: CircuitBreakers;
  budgets: BudgetCounters;
  agents: UpstreamAgents;
  settings: () => GatewaySettings;
  logger: Logger;
}

function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > MAX_REQUEST_BYTES) {
        resolve(undefined);
        req.resume();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

export class ModelProxy {
  readonly #d: ModelProxyDeps;

  constructor(deps: ModelProxyDeps) {
    this.#d = deps;
  }

  async handle(req: IncomingMessage, res: ServerResponse, caller: ModelCaller): Promise<void> {
    const url = new URL(req.url ?? "/", "http://gateway");
    const path = url.pathname.replace(/\/+$/, "");
    if (req.method === "GET" && path === "/v1/models") return this.#listModels(res);
    const kind = ROUTES[`${req.method} ${path}`];
    if (!kind) return sendProviderError(res, path.endsWith("/messages") ? "anthropic" : "openai", 404, `${req.method} ${path} is not served by the model gateway`);

    const body = await readBody(req);
    if (!body) return sendProviderError(res, kind, 413, `request body is larger than ${MAX_REQUEST_BYTES} bytes`);
    let model: unknown;
    try {
      model = (JSON.parse(body.toString("utf8")) as { model?: unknown } | null)?.model;
    } catch {
      return sendProviderError(res, kind, 400, "request body is not valid JSON");
    }
    if (typeof model !== "string" || model === "") return sendProviderError(res, kind, 400, "request body must name a model (\"model\": string)");

    const settings = this.#d.settings();
    const subjects = this.#budgetSubjects(caller, settings);
    for (const s of subjects) {
      const exhausted = this.#d.budgets.exhausted(s.subject, s.budget);
      if (exhausted) {
        return sendProviderError(res, kind, 429, `${s.label} budget of ${exhausted} exhausted for this ${s.budget!.windowSec}s window`, {
          code: "rate_limit_exceeded",
          retryAfterSec: this.#d.budgets.retryAfterSec(s.budget!),
        });
      }
    }

    const candidates = candidateOrder(this.#d.providers.all(), kind, model);
    if (candidates.length === 0) return sendProviderError(res, kind, 404, `no provider serves model ${JSON.stringify(model)}`, { code: "model_not_found" });
    for (const s of subjects) this.#d.budgets.countRequest(s.subject, s.budget);

    const clientGone = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) clientGone.abort();
    });

    let last: AttemptResult | undefined;
    let tried = 0;
    for (const provider of candidates) {
      if (clientGone.signal.aborted) return;
      if (!this.#d.breakers.tryAcquire(provider.name)) continue;
      let key: string | undefined;
      try {
        key = this.#d.providers.resolveKey(provider);
      } catch (err) {
        // A configuration fault (a deleted secret), not the provider's: logged, the next provider tried.
        this.#d.breakers.release(provider.name);
        this.#d.logger.warn({ provider: provider.name, err }, "model provider key could not be resolved");
        continue;
      }
      tried++;
      const result = await attemptUpstream(this.#d.agents, {
        method: req.method!,
        url: upstreamUrl(provider, path, url.search),
        headers: upstreamHeaders(provider, req.headers, key, body.length),
        body,
        timeoutMs: settings.attemptTimeoutMs,
        signal: clientGone.signal,
      });
      if (result.ok) {
        this.#stream(result.response, res, { kind, provider: provider.name, model, caller, subjects });
        return;
      }
      if (clientGone.signal.aborted) {
        this.#d.breakers.release(provider.name);
        return;
      }
      this.#d.breakers.failure(provider.name);
      this.#d.logger.info({ provider: provider.name, model, reason: result.reason }, "model provider failed; trying the next");
      last = result;
    }
    if (tried === 0) return sendProviderError(res, kind, 503, `every provider of model ${JSON.stringify(model)} is unavailable (circuit open or key missing)`);
    if (last && !last.ok && last.status !== null) {
      // Every provider answered with an error: the last answer as it came (the caller's SDK knows its shape).
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(last.headers)) if (v !== undefined && !DROPPED_RESPONSE_HEADERS.has(k) && k !== "content-length") headers[k] = v;
      res.writeHead(last.status, { ...headers, "content-length": last.body.length });
      res.end(last.body);
      return;
    }
    sendProviderError(res, kind, 502, `no provider of model ${JSON.stringify(model)} could be reached (${last && !last.ok ? last.reason : "unknown"})`);
  }

  #budgetSubjects(caller: ModelCaller, s: GatewaySettings): BudgetSubject[] {
    const out: BudgetSubject[] = [];
    if (caller.sandboxId && s.sandboxBudget) out.push({ subject: `sandbox:${caller.sandboxId}`, budget: s.sandboxBudget, label: "sandbox" });
    if (caller.apiKeyId !== null && s.keyBudget) out.push({ subject: `key:${caller.apiKeyId}`, budget: s.keyBudget, label: "API key" });
    return out;
  }

  #stream(
    upstream: IncomingMessage,
    res: ServerResponse,
    ctx: { kind: ProviderKind; provider: string; model: string; caller: ModelCaller; subjects: BudgetSubject[] },
  ): void {
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(upstream.headers)) if (v !== undefined && !DROPPED_RESPONSE_HEADERS.has(k)) headers[k] = v;
    const contentType = upstream.headers["content-type"];
    const sse = (contentType ?? "").toLowerCase().startsWith("text/event-stream");
    res.writeHead(upstream.statusCode ?? 502, headers);
    // What arrives in one turn of the event loop leaves in one write: the head, the chunks read with it and, for a
    // short answer, the end — instead of a write each (three segments, and a wake-up of the caller for each). The
    // socket is uncorked in the same turn (setImmediate runs right after I/O polling), so nothing waits for more data.
    const socket = res.socket;
    let corked = false;
    const cork = () => {
      if (corked || !socket) return;
      corked = true;
      socket.cork();
      setImmediate(() => {
        corked = false;
        socket.uncork();
      });
    };
    cork();
    res.flushHeaders();
    const meter = new UsageMeter(contentType);
    let ended = false;
    const finish = (complete: boolean) => {
      if (ended) return;
      ended = true;
      if (complete) this.#d.breakers.success(ctx.provider);
      else this.#d.breakers.failure(ctx.provider);
      const usage = meter.finish();
      const tokens = usage ? usage.inputTokens + usage.outputTokens : 0;
      for (const s of ctx.subjects) this.#d.budgets.countTokens(s.subject, s.budget, tokens);
      this.#d.usage.add(ctx.caller.sandboxId, ctx.caller.apiKeyId, ctx.model, usage?.inputTokens ?? 0, usage?.outputTokens ?? 0);
    };
    upstream.on("data", (chunk: Buffer) => {
      meter.push(chunk);
      cork();
      // Unbuffered: each chunk goes out as it arrives; back-pressure pauses the provider.
      if (!res.write(chunk)) {
        upstream.pause();
        res.once("drain", () => upstream.resume());
      }
    });
    upstream.on("end", () => {
      finish(true);
      res.end();
    });
    upstream.on("aborted", () => broke());
    upstream.on("error", () => broke());
    const broke = () => {
      if (ended) return;
      finish(false);
      this.#d.logger.warn({ provider: ctx.provider, model: ctx.model }, "model provider broke off mid-answer");
      if (sse && !res.destroyed) res.end(midStreamErrorEvent(ctx.kind, `provider ${ctx.provider} broke off mid-stream; the answer is incomplete`));
      else res.destroy();
    };
    res.once("close", () => {
      if (!ended) {
        // The caller left: no verdict on the provider.
        ended = true;
        this.#d.breakers.release(ctx.provider);
        upstream.destroy();
      }
    });
  }

  #listModels(res: ServerResponse): void {
    const seen = new Map<string, string>();
    for (const p of this.#d.providers.all()) for (const m of p.models) if (m !== "*" && !seen.has(m)) seen.set(m, p.name);
    const body = JSON.stringify({ object: "list", data: [...seen].map(([id, owner]) => ({ id, object: "model", created: 0, owned_by: owner })) });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
  }
}
