// The create route's cluster hook: every POST /sandboxes (and /v2/…) on a node of a cluster is placed (placement.ts)
// and, when another node is chosen, forwarded there (forward-create.ts) marked so that node creates it itself. A
// node that fails to take it (unreachable, 503, full, or not knowing the caller's key: keys are each node's own yet)
// is passed over for the next in the plan. A cordoned node creates nothing, not even what another node forwarded
// (that node then tries its next choice). Creates with volumes stay on the node they reached: volumes are node-local.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { BurrowError, Code } from "@burrow/protocol";
import { isForwarded } from "./forwarded-header.js";
import { forwardCreate, type ForwardedAnswer } from "./forward-create.js";
import type { Membership } from "./membership.js";
import type { NodeView } from "./node-record.js";
import { cpuSince, placeCreate, type PlacementNode, type PlacementPlan } from "./placement.js";
import type { RecentCreates } from "./recent-creates.js";
import type { ClusterTemplates } from "./cluster-templates.js";
import { recordMatches } from "./template-records.js";

/** What this node knows of itself now, fresher than its record. */
export interface LocalFacts {
  runningSandboxes: () => number;
  poolFill: () => ReadonlyArray<{ template: string; ready: number }>;
  /** The template's id and aliases when this node has it. */
  resolveTemplate: (ref: string) => { templateId: string; aliases: readonly string[] } | undefined;
  capacity: number;
}

export interface CreatePlacementDeps {
  membership: Membership;
  recent: RecentCreates;
  local: LocalFacts;
  logger: Logger;
  /** Drawn nodes (power of k choices). */
  choices?: number;
  /** Templates in the cluster's bucket: a node without one fetches it before creating (cluster-templates.ts). */
  templates?: Pick<ClusterTemplates, "records" | "ensureLocal"> | undefined;
}

interface CreateBody {
  templateID: string;
  volumeMounts?: unknown[];
}

/** Answers that mean "this node cannot take it now"; anything else (a bad request, a 500) is the caller's answer. */
const PASS_OVER = new Set([401, 429, 503, 507]);

/** A record without capacity (version 1) is taken to have the default admission limit. */
const DEFAULT_CAPACITY = 2000;

export class CreatePlacement {
  readonly #d: CreatePlacementDeps;
  /** Creates this node sent to each node (itself included) that have not answered yet. */
  readonly #inFlight = new Map<string, number>();

  constructor(deps: CreatePlacementDeps) {
    this.#d = deps;
  }

  /**
   * Place the create: true when it was answered here (another node's answer, or a refusal); false when this node
   * creates it. Throws BurrowError (503) when no node can take it.
   */
  async place(request: FastifyRequest, reply: FastifyReply, body: CreateBody): Promise<boolean> {
    const self = this.#d.membership.nodeName;
    const cordoned = this.#d.membership.node(self)?.cordoned ?? false;
    if (isForwarded(request.headers) || (body.volumeMounts?.length ?? 0) > 0) {
      if (cordoned) throw unavailable(`node ${self} is cordoned: it takes no new sandboxes`, "node_cordoned");
      await this.#d.templates?.ensureLocal(body.templateID, request.apiKeyId, clientGone(reply));
      return false;
    }
    const names = this.#templateNames(body.templateID);
    // Published, wherever it is: this node's own templates too, which the others can fetch (built here, then this
    // node cordoned or fuller, a create through it must not be refused because no other node has fetched it yet).
    const fetchable = this.#d.templates?.records().some((r) => recordMatches(r, body.templateID)) ?? false;
    const plan = placeCreate(this.#nodes(names), { template: names, self, fetchable, ...(this.#d.choices ? { choices: this.#d.choices } : {}) });
    if (plan.order.length === 0) return this.#nowhere(plan, body.templateID, cordoned);
    const passedOver: string[] = [];
    const signal = clientGone(reply);
    for (const node of plan.order) {
      if (node === self) {
        this.#track(self, reply);
        if (fetchable) await this.#d.templates?.ensureLocal(body.templateID, request.apiKeyId, signal);
        return false;
      }
      const view = this.#d.membership.node(node);
      if (!view) continue;
      const answer = await this.#forward(node, view, request, signal);
      if (answer.kind === "interrupted") {
        // Passing it on could make a second sandbox beside one the node made before the connection broke.
        this.#d.logger.warn({ node, why: answer.error, template: body.templateID }, "a placed create was interrupted after it was sent");
        throw new BurrowError(Code.Unavailable, `node ${node} took the create but its answer was lost (${answer.error}); the sandbox may exist there: list sandboxes (by metadata) before creating again`, {
          reason: "create_interrupted",
        });
      }
      if (answer.kind === "answer" && !PASS_OVER.has(answer.status)) {
        void reply.code(answer.status).headers(answer.headers).send(answer.body);
        return true;
      }
      const why = answer.kind === "answer" ? String(answer.status) : answer.error;
      passedOver.push(`${node} (${why})`);
      this.#d.logger.warn({ node, why, template: body.templateID }, "a node did not take a placed create; trying the next");
      if (signal.aborted) throw new BurrowError(Code.Canceled, "request canceled");
    }
    throw unavailable(`no node could take the sandbox: ${passedOver.join(", ")}${cordoned ? `; node ${self} is cordoned` : ""}`, "no_node_available");
  }

  /**
   * The node placement would try first for a sandbox of this template, made by the server itself (a trigger's or
   * task's fresh sandbox); undefined: this node (also when none can take it: it then answers as on one machine).
   */
  choose(templateRef: string): string | undefined {
    const self = this.#d.membership.nodeName;
    const names = this.#templateNames(templateRef);
    const fetchable = this.#d.templates?.records().some((r) => recordMatches(r, templateRef)) ?? false;
    const first = placeCreate(this.#nodes(names), { template: names, self, fetchable, ...(this.#d.choices ? { choices: this.#d.choices } : {}) }).order[0];
    return first === self ? undefined : first;
  }

  /** Nothing can take it: a template no node has is this node's 404 to give (as on one machine), else 503. */
  #nowhere(plan: PlacementPlan, ref: string, cordoned: boolean): boolean {
    const hasIt = plan.skipped.filter((s) => s.why !== "no_template" && s.why !== "templates_unknown");
    if (hasIt.length === 0 && !cordoned) return false;
    const reasons = plan.skipped.map((s) => `${s.node} ${s.why.replace("_", " ")}`).join(", ");
    throw unavailable(`no node can take a sandbox of template '${ref}' now (${reasons})`, "no_node_available");
  }

  async #forward(node: string, view: NodeView, request: FastifyRequest, signal: AbortSignal): Promise<ForwardedAnswer> {
    this.#inFlight.set(node, (this.#inFlight.get(node) ?? 0) + 1);
    try {
      return await forwardCreate(node, view.apiUrl, this.#d.membership.signing, request, signal);
    } finally {
      this.#done(node);
    }
  }

  #track(node: string, reply: FastifyReply): void {
    this.#inFlight.set(node, (this.#inFlight.get(node) ?? 0) + 1);
    reply.raw.once("close", () => this.#done(node));
  }

  #done(node: string): void {
    const n = (this.#inFlight.get(node) ?? 1) - 1;
    if (n > 0) this.#inFlight.set(node, n);
    else this.#inFlight.delete(node);
  }

  /** The reference as asked, without its tag, and the id and aliases it has here (other nodes list both). */
  #templateNames(ref: string): string[] {
    const names = new Set([ref, ref.split(":", 1)[0]!]);
    const here = this.#d.local.resolveTemplate(ref);
    if (here) for (const name of [here.templateId, ...here.aliases]) names.add(name);
    return [...names];
  }

  #nodes(names: readonly string[]): PlacementNode[] {
    const { membership, recent, local } = this.#d;
    const self = membership.nodeName;
    const views = membership.list();
    if (!views.some((v) => v.name === self)) views.push(selfBeforeJoin(self));
    const wanted = new Set(names);
    const warmOf = (pools: ReadonlyArray<{ template: string; ready: number }>) => pools.filter((p) => wanted.has(p.template)).reduce((sum, p) => sum + p.ready, 0);
    return views.map((view): PlacementNode => {
      const inFlight = this.#inFlight.get(view.name) ?? 0;
      if (view.name === self) {
        // This node's own figures are read live: its record is a heartbeat old.
        const has = local.resolveTemplate(names[0]!) !== undefined;
        const sandboxes = local.runningSandboxes() + inFlight;
        return {
          name: self,
          up: true,
          cordoned: view.cordoned,
          templates: has ? wanted : new Set(),
          sandboxes,
          capacity: local.capacity,
          freeMemoryBytes: view.load.freeMemoryBytes,
          warm: Math.max(0, warmOf(local.poolFill()) - inFlight),
          cpu: cpuSince(view.load.cpu, view.load.runningSandboxes, sandboxes),
        };
      }
      const pending = recent.since(view.name) + inFlight;
      const sandboxes = Math.max(0, view.load.runningSandboxes + pending);
      return {
        name: view.name,
        up: view.status === "up",
        cordoned: view.cordoned,
        templates: view.load.templates ? new Set(view.load.templates) : undefined,
        sandboxes,
        capacity: view.load.capacity ?? DEFAULT_CAPACITY,
        freeMemoryBytes: view.load.freeMemoryBytes,
        // Ended sandboxes do not refill a pool: only creates since the record are taken off its warm ones.
        warm: Math.max(0, warmOf(view.load.poolFill) - Math.max(0, pending)),
        cpu: cpuSince(view.load.cpu, view.load.runningSandboxes, sandboxes),
      };
    });
  }
}

/** A node that has not written its record yet (it joins once listening) places as an uncordoned, empty node. */
function selfBeforeJoin(name: string): NodeView {
  return {
    v: 0,
    name,
    apiUrl: "",
    version: "",
    startedAt: "",
    cordoned: false,
    heartbeatAt: "",
    load: { freeMemoryBytes: Number.MAX_SAFE_INTEGER, runningSandboxes: 0, poolFill: [] },
    status: "up",
    lastSeenAt: "",
    revision: 0,
  };
}

function unavailable(message: string, reason: string): BurrowError {
  return new BurrowError(Code.Unavailable, message, { reason });
}

/** Aborts when the client goes before the answer is written: a create it no longer waits for is not forwarded on. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}
