// Forwarding to the node that owns a sandbox. The gateway of every node routes a request exactly as on one machine
// (E2b-Sandbox-Id header, `<port>-<id>.<domain>` host); when the sandbox is not on this node and another node owns
// it, the request goes to that node's gateway unchanged (Host and E2B's headers kept, bytes streamed both ways, the
// same proxy code as sandbox traffic), and that node's gateway and API answer it as if the client had called there.
// REST calls naming a sandbox (/sandboxes/{id}…, /v2/…, /burrow/v1/…) are forwarded the same way, so their answers
// come from the owner's own state. Lists are gathered from every node (list-fanout.ts). Creates stay local.
// A sandbox whose record is marked lost (its node went down, lost-sweep.ts) is answered here as E2B answers for a
// sandbox that is gone: the gateway's 502 "The sandbox was not found" (the SDK's SandboxNotFoundError on commands),
// and 404 {code, message} on the REST API, saying the node was lost. A kill of a lost sandbox is kept (lost-kill.ts).
// Routes naming a checkpoint (/burrow/v1/checkpoints/{id}…) go to the node its record names (checkpoint-records.ts);
// one of a node that is down is answered 503 naming that node.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { Logger } from "pino";
import { apiKeyFromHeaders } from "../auth/credentials.js";
import { SandboxConnections } from "../gateway/connections.js";
import { proxyHttp, type ProxyFailure, type Upstream } from "../gateway/proxy-http.js";
import { proxyUpgrade } from "../gateway/proxy-upgrade.js";
import { goneBody, jsonAnswer, sendJson, sendRawJson } from "../gateway/responses.js";
import type { GatewayAnswer } from "../gateway/retry-answer.js";
import { routeRequest } from "../gateway/route.js";
import type { CheckpointRecords } from "./checkpoint-records.js";
import { isForwarded } from "./forwarded-header.js";
import { fanOutList, isListRequest } from "./list-fanout.js";
import { rememberKill } from "./lost-kill.js";
import type { Membership } from "./membership.js";
import type { OwnerRecord, SandboxOwners } from "./sandbox-owners.js";

/** A sandbox's own REST path (its kill is DELETE on it). */
const SANDBOX_ITSELF = /^\/(?:v2\/|burrow\/v1\/)?sandboxes\/[a-z0-9]+\/?(?:\?|$)/;
/** REST paths that name one sandbox: E2B's v1 and v2 and Burrow's own. */
const SANDBOX_PATH = /^\/(?:v2\/|burrow\/v1\/)?sandboxes\/([a-z0-9]+)(?:[/?]|$)/;
/** Burrow's routes that name one checkpoint (read, branch, delete). */
const CHECKPOINT_PATH = /^\/burrow\/v1\/checkpoints\/([^/?]+)(?:[/?]|$)/;

export interface ForwarderDeps {
  membership: Membership;
  owners: SandboxOwners;
  /** Whether this node has the sandbox (running or paused): then it answers itself. */
  isLocal: (sandboxId: string) => boolean;
  /**
   * Whether this node knows an API key. Forwarded requests are authenticated by the owner; a lost sandbox has none,
   * so REST answers about it (and a kill kept for it) are given here to callers with a key this node knows.
   */
  verifyApiKey: (key: string) => boolean;
  logger: Logger;
}

/** `rest`: a REST path names the sandbox (answers 404 when it is lost); otherwise the gateway routes it (502). */
type Target = { kind: "sandbox"; sandboxId: string; rest: boolean } | { kind: "list" };

/** A lost sandbox, as E2B answers for one that is gone. */
function lostAnswer(target: { sandboxId: string; rest: boolean }, record: OwnerRecord): { status: number; body: string } {
  if (!target.rest) return { status: 502, body: goneBody(target.sandboxId) };
  const message = `sandbox ${target.sandboxId} not found: node ${record.node}, which had it, was lost at ${record.lostAt}`;
  return { status: 404, body: JSON.stringify({ code: 404, message }) };
}

export class ClusterForwarder {
  readonly #d: ForwarderDeps;
  readonly #connections = new SandboxConnections();
  #checkpoints: CheckpointRecords | undefined;

  constructor(deps: ForwarderDeps) {
    this.#d = deps;
  }

  /**
   * Take a request that belongs to another node (or to all of them); false leaves it to this node. `local` is how
   * this node answers it, for a request taken while its owner was being looked up. Never throws.
   */
  handleRequest(req: IncomingMessage, res: ServerResponse, local: () => void): boolean {
    // First: a client's forwarded mark must be gone before anything (this, the create route) reads it.
    this.#d.membership.signing.admit(req);
    try {
      const checkpointId = this.#checkpoints && !isForwarded(req.headers) ? CHECKPOINT_PATH.exec(req.url ?? "")?.[1] : undefined;
      if (checkpointId !== undefined) return this.#routeCheckpoint(req, res, decodeURIComponent(checkpointId), local);
      const target = this.#target(req);
      if (!target) return false;
      if (target.kind === "list") {
        void fanOutList(req, res, this.#d.membership, this.#d.logger);
        return true;
      }
      return this.#route(
        target.sandboxId,
        local,
        (node, upstream) => this.#forwardHttp(req, res, node, upstream, target.sandboxId),
        () => {
          req.resume();
          sendJson(res, 503, JSON.stringify({ code: 503, message: `the cluster could not say which node has sandbox ${target.sandboxId}; retry` }));
        },
        (record) => {
          req.resume();
          const refused = target.rest ? this.#unauthenticated(req) : undefined;
          if (refused) return sendJson(res, 401, JSON.stringify({ code: 401, message: refused }));
          const answer = lostAnswer(target, record);
          // A kill is answered as for a gone sandbox, once it is kept for the node's return.
          const kill = target.rest && req.method === "DELETE" && SANDBOX_ITSELF.test(req.url ?? "");
          if (!kill) return sendJson(res, answer.status, answer.body);
          void rememberKill(this.#d.owners, target.sandboxId, this.#d.logger).then(() => sendJson(res, answer.status, answer.body));
        },
      );
    } catch (err) {
      this.#d.logger.error({ err, url: req.url }, "cluster forwarding failed");
      return false;
    }
  }

  /** The same for WebSocket (and other upgrade) requests. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, local: () => void): boolean {
    this.#d.membership.signing.admit(req);
    try {
      const target = this.#target(req);
      if (!target || target.kind !== "sandbox") return false;
      socket.on("error", () => socket.destroy());
      return this.#route(
        target.sandboxId,
        local,
        (node, upstream) => this.#forwardUpgrade(req, socket, head, node, upstream, target.sandboxId),
        () => sendRawJson(socket, 503, JSON.stringify({ code: 503, message: `the cluster could not say which node has sandbox ${target.sandboxId}; retry` })),
        (record) => {
          const answer = lostAnswer(target, record);
          sendRawJson(socket, answer.status, answer.body);
        },
      );
    } catch (err) {
      this.#d.logger.error({ err, url: req.url }, "cluster forwarding of an upgrade failed");
      return false;
    }
  }

  close(): void {
    this.#connections.close();
  }

  /** Forward requests naming a checkpoint to the node holding it, from its record. */
  routeCheckpoints(records: CheckpointRecords): void {
    this.#checkpoints = records;
  }

  /** Taken either way (the record is read first); answered by `local` when the checkpoint is this node's or nobody's. */
  #routeCheckpoint(req: IncomingMessage, res: ServerResponse, checkpointId: string, local: () => void): boolean {
    const me = this.#d.membership.nodeName;
    void this.#checkpoints!.lookup(checkpointId).then(
      (record) => {
        if (!record || record.node === me) return local();
        const view = this.#d.membership.node(record.node);
        const upstream = view?.status === "up" ? this.#upstreamOf(record.node) : undefined;
        if (upstream) return this.#forwardHttp(req, res, record.node, upstream, record.sandboxId);
        req.resume();
        const message = `checkpoint ${checkpointId} is on node ${record.node}, which is ${view ? "down" : "not in the cluster"}: retry once it is back`;
        sendJson(res, 503, JSON.stringify({ code: 503, message }));
      },
      (err: unknown) => {
        this.#d.logger.warn({ err, checkpointId }, "checkpoint record lookup failed");
        req.resume();
        sendJson(res, 503, JSON.stringify({ code: 503, message: `the cluster could not say which node has checkpoint ${checkpointId}; retry` }));
      },
    );
    return true;
  }

  /** Why the request may not be answered, as the API words it; undefined when its key is known here. */
  #unauthenticated(req: IncomingMessage): string | undefined {
    const key = apiKeyFromHeaders(req.headers);
    if (!key) return "missing API key: send it in the X-API-KEY header";
    return this.#d.verifyApiKey(key) ? undefined : "invalid API key";
  }

  #target(req: IncomingMessage): Target | undefined {
    if (isForwarded(req.headers)) return undefined;
    // Signed /files URLs are matched against this node's sandboxes only (no tokens leave their node).
    const route = routeRequest(req, () => []);
    if (route.kind === "sandbox") return { kind: "sandbox", sandboxId: route.sandboxId, rest: false };
    if (isListRequest(req)) return { kind: "list" };
    const rest = SANDBOX_PATH.exec(req.url ?? "");
    return rest ? { kind: "sandbox", sandboxId: rest[1]!, rest: true } : undefined;
  }

  /**
   * Forward when another node owns the sandbox: at once from the mirror, else after reading the bucket (then the
   * request is taken either way, and answered by `local` when the sandbox is nobody's). A record marked lost is
   * answered by `lost`, unless this node has the sandbox (it came back and has not taken the record back yet).
   */
  #route(sandboxId: string, local: () => void, forward: (node: string, upstream: Upstream) => void, unavailable: () => void, lost: (record: OwnerRecord) => void): boolean {
    if (this.#d.isLocal(sandboxId)) return false;
    const me = this.#d.membership.nodeName;
    const cached = this.#d.owners.cachedRecord(sandboxId);
    if (cached?.lostAt !== undefined) {
      lost(cached);
      return true;
    }
    if (cached?.node === me) return false;
    if (cached !== undefined) {
      const upstream = this.#upstreamOf(cached.node);
      if (!upstream) return false;
      forward(cached.node, upstream);
      return true;
    }
    void this.#d.owners.lookupRecord(sandboxId).then(
      (record) => {
        if (record?.lostAt !== undefined) return lost(record);
        const owner = record?.node;
        const upstream = owner !== undefined && owner !== me ? this.#upstreamOf(owner) : undefined;
        if (owner !== undefined && upstream) forward(owner, upstream);
        else local();
      },
      (err: unknown) => {
        this.#d.logger.warn({ err, sandboxId }, "owner lookup failed");
        unavailable();
      },
    );
    return true;
  }

  #upstreamOf(node: string): Upstream | undefined {
    const view = this.#d.membership.node(node);
    if (!view) return undefined;
    const url = new URL(view.apiUrl);
    return { host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 80) };
  }

  #forwardHttp(req: IncomingMessage, res: ServerResponse, node: string, upstream: Upstream, sandboxId: string): void {
    this.#d.membership.signing.mark(req, node);
    proxyHttp(req, res, {
      target: upstream,
      agent: this.#connections.agent(node),
      track: (...items) => this.#connections.track(node, ...items),
      answerFor: (failure) => this.#failureAnswer(failure, node, sandboxId),
      onFault: (fault) => this.#d.logger.warn({ node, sandboxId, cause: fault.cause, err: fault.err }, "forwarding to a node failed"),
      onUpstreamFailure: (failure, retried) => this.#d.logger.warn({ node, sandboxId, failure, retried }, "a node did not take a forwarded request"),
    });
  }

  #forwardUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, node: string, upstream: Upstream, sandboxId: string): void {
    this.#d.membership.signing.mark(req, node);
    proxyUpgrade(req, socket, head, {
      target: upstream,
      track: (...items) => this.#connections.track(node, ...items),
      answerFor: (failure) => this.#failureAnswer(failure, node, sandboxId),
      onFault: (fault) => this.#d.logger.warn({ node, sandboxId, cause: fault.cause, err: fault.err }, "forwarding an upgrade to a node failed"),
      onUpstreamFailure: (failure, retried) => this.#d.logger.warn({ node, sandboxId, failure, retried }, "a node did not take a forwarded upgrade"),
    });
  }

  #failureAnswer(failure: ProxyFailure, node: string, sandboxId: string): GatewayAnswer {
    const why = failure.kind === "upstream" ? `${failure.failure.kind}: ${failure.failure.code}` : failure.kind;
    return jsonAnswer(502, JSON.stringify({ code: 502, message: `node ${node}, which has sandbox ${sandboxId}, could not be reached (${why})` }));
  }
}
