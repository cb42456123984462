// The sandbox gateway: sits in front of the REST API on the same port, takes every request addressed to a
// sandbox (route.ts) and proxies it to `<sandbox address>:<port>`; everything else falls through to the API.
// A request for a paused sandbox with auto-resume waits for the sandbox to be resumed (auto-resume.ts) first.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import type { SandboxRecord } from "@burrow/orchestrator";
import { autoResumable } from "../lifecycle/sandbox-lifecycle.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { ServerMetrics } from "../metrics/prometheus.js";
import { wakeForRequest, wakesSandbox } from "./auto-resume.js";
import { SandboxConnections } from "./connections.js";
import { proxyHttp, type ProxyFailure, type ProxyFault, type Upstream } from "./proxy-http.js";
import { proxyUpgrade } from "./proxy-upgrade.js";
import {
  closedBody, goneBody, invalidResponseBody, jsonAnswer, proxyFailedBody, sendAnswer, sendJson, sendRawAnswer, sendRawJson,
} from "./responses.js";
import { retryAnswer, type GatewayAnswer } from "./retry-answer.js";
import { routeRequest, type GatewayRoute, type RouteVia, type SandboxToken } from "./route.js";
import { checkIngress, type IngressLookup } from "./traffic-token.js";
import { isTransient, type UpstreamFailure } from "./upstream-failure.js";
import { UpstreamFailureLog } from "./upstream-log.js";

/**
 * Where a sandbox port is reachable from the host. The default is the sandbox's own address and the same port;
 * a driver that forwards ports (or a test stub) can map it elsewhere.
 */
export type UpstreamResolver = (record: SandboxRecord, port: number) => Upstream;

/** Longest a request waits for a sandbox held by a rollback (sandbox-holds.ts); one takes 1–3 s, more under load. */
const HOLD_WAIT_MS = 60_000;

/** Ended sandboxes remembered for the log (oldest forgotten first). */
const MAX_REMEMBERED_ENDS = 10_000;

export const defaultUpstream: UpstreamResolver = (record, port) => ({ host: record.address, port });

export interface GatewayDeps {
  sandboxes: SandboxService;
  metrics: ServerMetrics;
  logger: Logger;
  upstream?: UpstreamResolver;
  /** Sandboxes' ingress rules (traffic token, masked host, traffic-token.ts); none when absent. */
  ingress?: IngressLookup;
}

function portClosedBody(sandboxId: string, port: number): string {
  return JSON.stringify({ sandboxId, message: "The sandbox is running but port is not open", port, code: 502 });
}

/** What a client is told when a running sandbox's port could not be reached, or broke off before answering. */
function upstreamFailureAnswer(failure: UpstreamFailure, req: IncomingMessage, sandboxId: string, port: number): GatewayAnswer {
  if (isTransient(failure)) {
    const message =
      `The sandbox ${sandboxId} is running, but the gateway could not get this request through to port ${port} ` +
      `(${failure.kind}: ${failure.code}); retry`;
    return retryAnswer(req.headers, sandboxId, port, message);
  }
  if (failure.kind === "refused") return jsonAnswer(502, portClosedBody(sandboxId, port));
  return jsonAnswer(502, closedBody(sandboxId, port));
}

type SandboxRoute = { sandboxId: string; port: number; via: RouteVia };

export class Gateway {
  readonly #d: GatewayDeps;
  readonly #connections = new SandboxConnections();
  readonly #upstream: UpstreamResolver;
  readonly #unsubscribe: Array<() => void>;
  readonly #upstreamFailures: UpstreamFailureLog;
  readonly #ended = new Map<string, number>();

  constructor(deps: GatewayDeps) {
    this.#d = deps;
    this.#upstreamFailures = new UpstreamFailureLog(deps.logger);
    this.#upstream = deps.upstream ?? defaultUpstream;
    // Killed and paused sandboxes alike: in-flight exchanges are dropped, and live() stops routing to them (502).
    this.#unsubscribe = [
      deps.sandboxes.onRemoved((id) => {
        this.#connections.drop(id);
        this.#rememberEnded(id);
      }),
      deps.sandboxes.onPaused((id) => this.#connections.drop(id)),
      // Its processes are about to end: exchanges under way cannot finish, kept-alive connections lead nowhere.
      deps.sandboxes.holds.onHold((id) => this.#connections.drop(id)),
    ];
  }

  /** In-flight proxied exchanges of a sandbox (for tests and diagnostics). */
  inflight(sandboxId: string): number {
    return this.#connections.inflight(sandboxId);
  }

  /** Handle a request addressed to a sandbox; false when it belongs to the REST API. Never throws. */
  handleRequest(req: IncomingMessage, res: ServerResponse): boolean {
    try {
      const route = this.#route(req);
      if (route.kind === "api") return false;
      this.#serve(req, res, route);
    } catch (err) {
      this.#d.logger.error({ err, url: req.url }, "gateway request failed");
      try {
        sendJson(res, 500, JSON.stringify({ code: 500, message: "internal gateway error" }));
      } catch {
        res.destroy();
      }
    }
    return true;
  }

  /** Handle an upgrade request; upgrades are only meaningful for sandboxes, so API ones get a 404. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => socket.destroy());
    try {
      const route = this.#route(req);
      if (route.kind === "api") {
        sendRawJson(socket, 404, JSON.stringify({ code: 404, message: "no upgrade route here" }));
      } else if (route.kind === "invalid") {
        this.#count("upgrade", undefined, "invalid");
        sendRawJson(socket, 400, JSON.stringify({ code: 400, message: route.message }));
      } else if (route.kind === "unmatched") {
        this.#count("upgrade", route.via, "not_found");
        sendRawJson(socket, 502, goneBody(""));
      } else if (this.#d.sandboxes.holds.pending(route.sandboxId)) {
        void this.#afterHold(route, () => this.handleUpgrade(req, socket, head), () => socket.destroyed, (answer) => sendRawAnswer(socket, answer), req);
      } else {
        const live = this.#d.sandboxes.live(route.sandboxId);
        if (live) {
          this.#count("upgrade", route.via, "proxied");
          this.#proxyUpgrade(req, socket, head, route, live.record);
        } else if (wakesSandbox(req, route.port) && this.#d.sandboxes.autoResumable(route.sandboxId)) {
          // A request the sandbox would refuse (no traffic token) must not wake it either.
          const ingress = checkIngress(this.#d.ingress?.(route.sandboxId), route.sandboxId, route.port, req.headers);
          if (ingress.ok) void this.#upgradeAfterWake(req, socket, head, route);
          else sendRawAnswer(socket, ingress.answer);
        } else {
          this.#count("upgrade", route.via, "not_found");
          this.#logEnded(route.sandboxId, req);
          sendRawJson(socket, 502, goneBody(route.sandboxId, this.#isPaused(route.sandboxId)));
        }
      }
    } catch (err) {
      this.#d.logger.error({ err, url: req.url }, "gateway upgrade failed");
      socket.destroy();
    }
  }

  close(): void {
    for (const unsubscribe of this.#unsubscribe) unsubscribe();
    this.#connections.close();
  }

  #route(req: IncomingMessage): GatewayRoute {
    return routeRequest(req, () => this.#liveTokens());
  }

  /** Sandboxes a signed URL may be routed to: running ones, and paused ones that its request would resume. */
  *#liveTokens(): Iterable<SandboxToken> {
    for (const row of this.#d.sandboxes.list()) {
      if (row.state === "running" || autoResumable(row)) yield { sandboxId: row.sandboxId, envdAccessToken: row.envdAccessToken };
    }
  }

  #serve(req: IncomingMessage, res: ServerResponse, route: Exclude<GatewayRoute, { kind: "api" }>): void {
    if (route.kind === "invalid") {
      this.#count("http", undefined, "invalid");
      sendJson(res, 400, JSON.stringify({ code: 400, message: route.message }));
      return;
    }
    if (route.kind === "unmatched") {
      this.#count("http", route.via, "not_found");
      sendJson(res, 502, goneBody(""));
      return;
    }
    if (this.#d.sandboxes.holds.pending(route.sandboxId)) {
      const answer = (a: GatewayAnswer) => {
        req.resume();
        sendAnswer(res, a);
      };
      void this.#afterHold(route, () => this.#serve(req, res, route), () => req.destroyed || res.destroyed, answer, req);
      return;
    }
    const live = this.#d.sandboxes.live(route.sandboxId);
    if (live) {
      this.#count("http", route.via, "proxied");
      this.#proxyHttp(req, res, route, live.record);
      return;
    }
    if (wakesSandbox(req, route.port) && this.#d.sandboxes.autoResumable(route.sandboxId)) {
      // A request the sandbox would refuse (no traffic token) must not wake it either.
      const ingress = checkIngress(this.#d.ingress?.(route.sandboxId), route.sandboxId, route.port, req.headers);
      if (ingress.ok) {
        void this.#serveAfterWake(req, res, route);
      } else {
        req.resume();
        sendAnswer(res, ingress.answer);
      }
      return;
    }
    this.#count("http", route.via, "not_found");
    // Drain what the client sends so that its keep-alive connection stays usable.
    req.resume();
    this.#logEnded(route.sandboxId, req);
    sendJson(res, 502, goneBody(route.sandboxId, this.#isPaused(route.sandboxId)));
  }

  /**
   * Wait (at most HOLD_WAIT_MS) until the sandbox is no longer held, then handle the request as it stands then:
   * proxied when the sandbox runs again, the usual answers otherwise. The request's body waits unread meanwhile.
   * A hold that outlasts the bound is answered "try again" (retry-answer.ts), never a 502.
   */
  async #afterHold(route: SandboxRoute, serve: () => void, gone: () => boolean, answer: (a: GatewayAnswer) => void, req: IncomingMessage): Promise<void> {
    const hold = this.#d.sandboxes.holds.pending(route.sandboxId);
    let timer: NodeJS.Timeout | undefined;
    try {
      const ended = await Promise.race([
        hold?.then(() => true),
        new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), HOLD_WAIT_MS))),
      ]);
      if (gone()) return;
      if (ended) {
        serve();
        return;
      }
      this.#count(req.headers.upgrade ? "upgrade" : "http", route.via, "held_too_long");
      const message = `The sandbox ${route.sandboxId} is being restored from a checkpoint and is not back yet; retry`;
      answer(retryAnswer(req.headers, route.sandboxId, route.port, message));
    } catch (err) {
      this.#d.logger.error({ err, url: req.url, sandboxId: route.sandboxId }, "gateway request after a hold failed");
      req.destroy();
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resume the paused sandbox, then proxy; the request's body waits unread in its socket meanwhile. */
  async #serveAfterWake(req: IncomingMessage, res: ServerResponse, route: SandboxRoute): Promise<void> {
    this.#logWake(req, route);
    try {
      const woken = await wakeForRequest(this.#d.sandboxes, route.sandboxId);
      if (woken.answer) {
        this.#count("http", route.via, "auto_resume_failed");
        req.resume();
        sendAnswer(res, woken.answer);
        return;
      }
      // The client gave up while the sandbox was resumed: it stays resumed, there is nothing to send.
      if (req.destroyed || res.destroyed) return;
      this.#count("http", route.via, "auto_resumed");
      this.#proxyHttp(req, res, route, woken.live.record);
    } catch (err) {
      this.#d.logger.error({ err, url: req.url, sandboxId: route.sandboxId }, "gateway request after auto-resume failed");
      res.destroy();
    }
  }

  async #upgradeAfterWake(req: IncomingMessage, socket: Duplex, head: Buffer, route: SandboxRoute): Promise<void> {
    this.#logWake(req, route);
    try {
      const woken = await wakeForRequest(this.#d.sandboxes, route.sandboxId);
      if (woken.answer) {
        this.#count("upgrade", route.via, "auto_resume_failed");
        sendRawAnswer(socket, woken.answer);
        return;
      }
      if (socket.destroyed) return;
      this.#count("upgrade", route.via, "auto_resumed");
      this.#proxyUpgrade(req, socket, head, route, woken.live.record);
    } catch (err) {
      this.#d.logger.error({ err, url: req.url, sandboxId: route.sandboxId }, "gateway upgrade after auto-resume failed");
      socket.destroy();
    }
  }

  /** Which request woke a sandbox is worth knowing when one wakes more often than its owner expects. */
  #logWake(req: IncomingMessage, route: SandboxRoute): void {
    try {
      this.#d.logger.info(
        { sandboxId: route.sandboxId, port: route.port, method: req.method, url: req.url, via: route.via },
        "request for a paused sandbox with auto-resume: resuming it",
      );
    } catch {
      // A logger that throws must not take the exchange (or the server) down with it.
    }
  }

  #proxyUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, route: SandboxRoute, record: SandboxRecord): void {
    const ingress = checkIngress(this.#d.ingress?.(route.sandboxId), route.sandboxId, route.port, req.headers);
    if (!ingress.ok) {
      sendRawAnswer(socket, ingress.answer);
      return;
    }
    if (ingress.host !== undefined) req.headers.host = ingress.host;
    proxyUpgrade(req, socket, head, {
      tls: ingress.tls,
      target: this.#upstream(record, route.port),
      track: (...items) => this.#connections.track(route.sandboxId, ...items),
      answerFor: (failure) => this.#failureAnswer(failure, req, route.sandboxId, route.port),
      onFault: (fault) => this.#logFault(fault, route.sandboxId, route.port, req),
      onUpstreamFailure: (failure, retried) => this.#logUpstreamFailure("upgrade", failure, retried, route.sandboxId, route.port, req),
    });
  }

  #proxyHttp(req: IncomingMessage, res: ServerResponse, route: SandboxRoute, record: SandboxRecord): void {
    const ingress = checkIngress(this.#d.ingress?.(route.sandboxId), route.sandboxId, route.port, req.headers);
    if (!ingress.ok) {
      req.resume();
      sendAnswer(res, ingress.answer);
      return;
    }
    proxyHttp(req, res, {
      host: ingress.host,
      tls: ingress.tls,
      target: this.#upstream(record, route.port),
      agent: ingress.tls ? this.#connections.httpsAgent(route.sandboxId) : this.#connections.agent(route.sandboxId),
      track: (...items) => this.#connections.track(route.sandboxId, ...items),
      answerFor: (failure) => this.#failureAnswer(failure, req, route.sandboxId, route.port),
      onFault: (fault) => this.#logFault(fault, route.sandboxId, route.port, req),
      onUpstreamFailure: (failure, retried) => this.#logUpstreamFailure("http", failure, retried, route.sandboxId, route.port, req),
    });
  }

  /**
   * The gateway's own answer when an exchange fails. "Not found" only for a sandbox that is really gone by now (it
   * was killed or paused while the request was under way); a running sandbox that could not be reached in time gets
   * a retryable answer, one that is refusing connections or misbehaving a 502 that says so.
   */
  #failureAnswer(failure: ProxyFailure, req: IncomingMessage, sandboxId: string, port: number): GatewayAnswer {
    if (failure.kind === "invalid_response") return jsonAnswer(502, invalidResponseBody(sandboxId, port));
    if (failure.kind === "internal") return jsonAnswer(502, proxyFailedBody(sandboxId, port));
    if (!this.#d.sandboxes.live(sandboxId)) return jsonAnswer(502, goneBody(sandboxId, this.#isPaused(sandboxId)));
    return upstreamFailureAnswer(failure.failure, req, sandboxId, port);
  }

  #logUpstreamFailure(
    kind: "http" | "upgrade",
    failure: UpstreamFailure,
    retried: boolean,
    sandboxId: string,
    port: number,
    req: IncomingMessage,
  ): void {
    try {
      const live = this.#d.sandboxes.live(sandboxId) !== undefined;
      this.#upstreamFailures.record(failure, { sandboxId, port, method: req.method, url: req.url, retried, live });
      this.#d.metrics.upstreamErrors.inc({ cause: failure.kind });
      this.#count(kind, undefined, retried ? "upstream_retried" : `upstream_${failure.kind}`);
    } catch {
      // A logger that throws must not take the exchange (or the server) down with it.
    }
  }

  /** A sandbox that answers garbage is worth a warning (it may be hostile); a gateway exception is a bug. */
  #logFault(fault: ProxyFault, sandboxId: string, port: number, req: IncomingMessage): void {
    try {
      const fields = { sandboxId, port, method: req.method, url: req.url, cause: fault.cause, ...(fault.err ? { err: fault.err } : {}) };
      if (fault.kind === "invalid_response") this.#d.metrics.upstreamErrors.inc({ cause: "invalid_response" });
      if (fault.kind === "invalid_response") this.#d.logger.warn(fields, "sandbox answered with an invalid HTTP response");
      else this.#d.logger.error(fields, "gateway proxy listener failed");
    } catch {
      // A logger that throws must not take the exchange (or the server) down with it.
    }
  }

  /** Sandboxes that ended lately, and when: the first request for one afterwards is logged (see #logEnded). */
  #rememberEnded(sandboxId: string): void {
    if (this.#ended.size >= MAX_REMEMBERED_ENDS) this.#ended.delete(this.#ended.keys().next().value!);
    this.#ended.set(sandboxId, Date.now());
  }

  /**
   * A client still talking to a sandbox that ended (its lifetime ran out, it was killed) gets E2B's "not found",
   * which the SDK reports as "not running anymore" and which can look like a false alarm when it was not one. The
   * first such request per sandbox is logged, with how long ago the sandbox ended, so the two can be told apart.
   */
  #logEnded(sandboxId: string, req: IncomingMessage): void {
    const endedAt = this.#ended.get(sandboxId);
    if (endedAt === undefined) return;
    this.#ended.delete(sandboxId);
    try {
      this.#d.logger.info(
        { sandboxId, endedSecondsAgo: Math.round((Date.now() - endedAt) / 1000), method: req.method, url: req.url },
        "request for a sandbox that has ended (answered 502 not found)",
      );
    } catch {
      // A logger that throws must not take the exchange (or the server) down with it.
    }
  }

  #isPaused(sandboxId: string): boolean {
    return this.#d.sandboxes.get(sandboxId)?.state === "paused";
  }

  #count(kind: "http" | "upgrade", route: string | undefined, outcome: string): void {
    this.#d.metrics.gatewayRequests.inc({ kind, route: route ?? "none", outcome });
  }
}
