// Reporting the sandboxes of a node that went down. Every node looks at the nodes' records once per heartbeat; the up
// node with the lowest name takes the down node's loss marker (lost-marker.ts: only one node ever gets it per
// incarnation), marks each of the down node's owner records lost with a revision check (the record stays: the id
// remains taken and the node may take it back), and sends one `lost` lifecycle event and one log line per sandbox.
// Requests for a lost sandbox are answered "not found" by the forwarder.
//
// The same tick heals the other side: a record of this node marked lost while the node still has the sandbox (it
// was judged down while alive, or came back while the report was being made) is taken back (reconcile.ts).
import type { KV } from "@nats-io/kv";
import type { Logger } from "pino";
import type { SandboxEvents } from "../lifecycle/events.js";
import { finishLossMarker, takeLossMarker } from "./lost-marker.js";
import type { Membership } from "./membership.js";
import type { NodeView } from "./node-record.js";
import { reconcileSandbox, type LocalSandboxes } from "./reconcile.js";
import { OWNER_RECORD_VERSION, type SandboxOwners } from "./sandbox-owners.js";

/** The template id of a lost sandbox whose record does not name one (records written before version 2). */
const UNKNOWN_TEMPLATE = "unknown";

export interface LostSweepDeps {
  membership: Membership;
  owners: SandboxOwners;
  losses: KV;
  events: SandboxEvents;
  local: LocalSandboxes;
  logger: Logger;
  intervalMs: number;
}

export class LostSweep {
  readonly #d: LostSweepDeps;
  readonly #timer: NodeJS.Timeout;
  /** `node@incarnation` reports known complete, so that a node that stays down costs no reads. */
  readonly #reported = new Set<string>();
  #running: Promise<void> | undefined;
  #closed = false;

  constructor(deps: LostSweepDeps) {
    this.#d = deps;
    this.#timer = setInterval(() => void this.tick(), deps.intervalMs);
    this.#timer.unref();
  }

  /** One pass (also what the timer runs); a pass still running is waited for, not doubled. */
  tick(): Promise<void> {
    this.#running ??= this.#pass()
      .catch((err: unknown) => this.#d.logger.warn({ err }, "reporting lost sandboxes failed; trying again next heartbeat"))
      .finally(() => (this.#running = undefined));
    return this.#running;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#running;
  }

  async #pass(): Promise<void> {
    const { membership } = this.#d;
    const me = membership.nodeName;
    await this.#takeBackOwn(me);
    // A node whose own heartbeats do not come back through its watch sees every record as old: its view of who is
    // down cannot be trusted until the watch is restarted (membership.ts), so it reports nothing meanwhile. Its own
    // record alone does not tell: mirrored a moment after another node's, it can still look up when that one looks
    // down (seen after a NATS server died: a live node reported lost).
    if (membership.node(me)?.status !== "up" || !membership.watchIsCurrent()) return;
    const nodes = membership.list();
    const reporter = nodes.filter((n) => n.status === "up").map((n) => n.name).sort()[0];
    if (reporter !== me) return;
    for (const node of nodes) {
      if (this.#closed) return;
      if (node.status === "down" && node.name !== me && !this.#reported.has(`${node.name}@${node.startedAt}`)) await this.#report(node);
    }
  }

  async #takeBackOwn(me: string): Promise<void> {
    for (const sandboxId of this.#d.owners.cachedLost(me)) {
      if (!this.#d.local.get(sandboxId)) continue;
      await reconcileSandbox({ ...this.#d, nodeName: me }, sandboxId).catch((err: unknown) => this.#d.logger.warn({ err, sandboxId }, "could not take back a sandbox reported lost"));
    }
  }

  async #report(node: NodeView): Promise<void> {
    const { membership, owners, events, logger } = this.#d;
    const me = membership.nodeName;
    const key = `${node.name}@${node.startedAt}`;
    const taken = await takeLossMarker(this.#d.losses, { node: node.name, incarnation: node.startedAt, me, isUp: (name) => membership.node(name)?.status === "up" });
    if (taken === "done") this.#reported.add(key);
    if (typeof taken === "string") return;
    const stillDown = () => {
      const now = membership.node(node.name);
      return now !== undefined && now.status === "down" && now.startedAt === node.startedAt;
    };
    let lost = 0;
    for (const [sandboxId, { record, revision }] of await owners.ownedBy(node.name)) {
      if (record.lostAt !== undefined) continue;
      // Back meanwhile: what is left is the node's own to reconcile.
      if (this.#closed || !stillDown()) return;
      const lostAt = new Date();
      if (!(await owners.replace(sandboxId, { ...record, v: Math.max(record.v, OWNER_RECORD_VERSION), lostAt: lostAt.toISOString() }, revision))) continue;
      lost++;
      // Its team, so that the event reaches that team's streams (this node has no row of the sandbox to ask).
      const team = record.teamId !== undefined ? { teamId: record.teamId } : {};
      events.emit({ type: "lost", sandboxId, templateId: record.templateId ?? UNKNOWN_TEMPLATE, metadata: {}, timestamp: lostAt, ...team });
      logger.warn({ sandboxId, node: node.name, lastSeenAt: node.lastSeenAt }, "sandbox lost: its node is down");
    }
    if (await finishLossMarker(this.#d.losses, taken)) this.#reported.add(key);
    logger.warn({ node: node.name, lastSeenAt: node.lastSeenAt, lost }, "node down: its sandboxes were reported lost");
  }
}
