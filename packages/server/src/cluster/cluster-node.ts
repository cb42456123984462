// This server as a node of a cluster: the connection to NATS, the nodes and owners buckets, the forwarder. Opened
// before the sandbox service (creates must record their owner), joined once the server listens (its record names
// the URL it is reached at).
import { createRequire } from "node:module";
import type { Orchestrator } from "@burrow/orchestrator";
import type { Logger } from "pino";
import type { SandboxEvents } from "../lifecycle/events.js";
import type { ClusterConfig } from "./cluster-config.js";
import { followReconnects, openClusterKv, type ClusterKv } from "./cluster-kv.js";
import { CreatePlacement, type LocalFacts } from "./create-placement.js";
import { ClusterTemplates, type ClusterTemplatesOptions } from "./cluster-templates.js";
import { ForwardSigning } from "./forwarded-header.js";
import { loadForwardKey } from "./forward-secret.js";
import { ClusterForwarder } from "./forwarder.js";
import { LostSweep } from "./lost-sweep.js";
import { Membership } from "./membership.js";
import { CpuUse } from "./cpu-use.js";
import { sampleNodeLoad, type LoadSources } from "./node-load.js";
import { ownedOrchestrator } from "./owned-orchestrator.js";
import { whenClusterAnswers } from "./cluster-retry.js";
import { RecentCreates } from "./recent-creates.js";
import { SandboxMoves, type SandboxMovesOptions } from "./sandbox-moves.js";
import { syncOwnership } from "./ownership-sync.js";
import type { LocalSandboxes } from "./reconcile.js";
import { followOwnerFacts } from "./owner-facts.js";
import { SandboxOwners, type OwnerFacts } from "./sandbox-owners.js";
import { countedByUsage, teamUsageElsewhere, type RemoteUsage } from "./team-usage.js";
import { TeamLedger } from "./team-ledger.js";
import { TeamSync, type TeamSyncOptions } from "./team-sync.js";

const VERSION = (createRequire(import.meta.url)("../../package.json") as { version: string }).version;

/** Where the load in the node's record comes from. */
export interface ClusterNodeDeps extends LoadSources {
  logger: Logger;
}

export class ClusterNode {
  readonly #stopSync: Array<() => void> = [];
  #lostSweep: LostSweep | undefined;
  #teamSync: TeamSync | undefined;
  #templates: ClusterTemplates | undefined;
  #moves: SandboxMoves | undefined;

  private constructor(
    readonly config: ClusterConfig,
    readonly membership: Membership,
    readonly owners: SandboxOwners,
    private readonly kv: ClusterKv,
    private readonly logger: Logger,
  ) {}

  static async open(config: ClusterConfig, deps: ClusterNodeDeps): Promise<ClusterNode> {
    const logger = deps.logger.child({ component: "cluster", node: config.nodeName });
    const kv = await openClusterKv(config.servers, config.nodeName, config.replicas, logger);
    try {
      let owners: SandboxOwners | undefined;
      let node: ClusterNode | undefined;
      const cpu = new CpuUse();
      const signing = new ForwardSigning(await whenClusterAnswers("read the cluster's forwarding secret", () => loadForwardKey(kv.settings), { logger }), config.nodeName, logger);
      const membership = await Membership.open({
        kv: kv.nodes,
        nodeName: config.nodeName,
        version: VERSION,
        heartbeatMs: config.heartbeatMs,
        downAfterMs: config.downAfterMs,
        load: () => sampleNodeLoad(deps, cpu),
        logger,
        signing,
        // Both watches share the connection and its fate: the owners' mirror is restarted with the nodes'.
        onStaleWatch: async () => {
          await Promise.all([owners?.restartWatch(), node?.restartTeamWatches()]);
        },
      });
      owners = await SandboxOwners.open(kv, config.nodeName, logger);
      node = new ClusterNode(config, membership, owners, kv, logger);
      return node;
    } catch (err) {
      await kv.close().catch(() => undefined);
      throw err;
    }
  }

  /** The orchestrator whose creates record this node as their sandbox's owner before answering. */
  owning(orchestrator: Orchestrator): Orchestrator {
    const self = this.config.nodeName;
    return ownedOrchestrator(
      orchestrator,
      this.owners,
      this.logger,
      () => (this.membership.node(self)?.cordoned ? self : undefined),
      async (sandboxId) => this.#moves?.beforeResume(sandboxId),
    );
  }

  /**
   * Reconcile this node's sandboxes with their records (taking back those reported lost), drop its stale records,
   * follow lifecycle events from now on, and report the sandboxes of nodes that go down (lost-sweep.ts).
   */
  async syncOwnership(localIds: () => string[], events: SandboxEvents, local: LocalSandboxes): Promise<void> {
    this.#stopSync.push(await syncOwnership(this.owners, localIds, events, this.logger, local, this.config.nodeName));
    this.#lostSweep = new LostSweep({ membership: this.membership, owners: this.owners, losses: this.kv.losses, events, local, logger: this.logger, intervalMs: this.config.heartbeatMs });
  }

  /**
   * Write each of this node's sandboxes' team, size and pause into its owner record from now on (owner-facts.ts), the
   * sandboxes it has now included. `events`: the same lifecycle events as syncOwnership's.
   */
  describeSandboxes(events: SandboxEvents, localIds: () => string[], facts: (sandboxId: string) => OwnerFacts | undefined): void {
    this.#stopSync.push(followOwnerFacts({ owners: this.owners, events, localIds, facts, logger: this.logger }));
  }

  /** Teams' running usage on the other nodes (team-usage.ts), for quota checks here. */
  teamUsageElsewhere(): Map<string | null, RemoteUsage> {
    return teamUsageElsewhere(this.owners, this.config.nodeName);
  }

  /** Every node's quota holds and starts, by team (team-ledger.ts): a team's limits hold at once on every node. */
  teamLedger(): TeamLedger {
    const self = this.config.nodeName;
    return new TeamLedger({
      kv: this.kv.teamQuotas,
      nodeName: self,
      isUp: (node) => this.membership.node(node)?.status === "up",
      counted: (sandboxId, hold, now) => countedByUsage(this.owners, sandboxId, hold, self, now),
      logger: this.logger,
    });
  }

  /** Teams and API keys shared with every node (team-sync.ts): pushed from the store, mirrored into it. */
  async syncTeams(o: Pick<TeamSyncOptions, "store" | "defaultTeamId" | "onRevoked">): Promise<void> {
    this.#teamSync = await TeamSync.start({ ...o, teams: this.kv.teams, keys: this.kv.keys, logger: this.logger });
  }

  async restartTeamWatches(): Promise<void> {
    await this.#teamSync?.restartWatches();
  }

  /** `verifyApiKey`: whether this node knows a key (answers about lost sandboxes are given to callers with one only). */
  forwarder(isLocal: (sandboxId: string) => boolean, verifyApiKey: (key: string) => boolean): ClusterForwarder {
    const forwarder = new ClusterForwarder({ membership: this.membership, owners: this.owners, isLocal, verifyApiKey, logger: this.logger });
    this.#stopSync.push(() => forwarder.close());
    return forwarder;
  }

  /** The create route's hook: where each new sandbox goes. */
  placement(local: LocalFacts): CreatePlacement {
    const recent = RecentCreates.open(this.kv.nc, this.logger);
    this.#stopSync.push(() => recent.close());
    return new CreatePlacement({ membership: this.membership, recent, local, logger: this.logger, templates: this.#templates });
  }

  /** Templates and snapshots published to and fetched from the cluster (cluster-templates.ts); before placement(). */
  async shareTemplates(o: Pick<ClusterTemplatesOptions, "local" | "teams" | "deleteLocal" | "shipped">): Promise<ClusterTemplates> {
    const { nodeName, replicas, heartbeatMs } = this.config;
    this.#templates = await ClusterTemplates.open({ ...o, nc: this.kv.nc, replicas, nodeName, intervalMs: heartbeatMs, logger: this.logger });
    return this.#templates;
  }

  /**
   * Filesystem pauses published for other nodes and taken over from lost or drained ones (sandbox-moves.ts); after
   * shareTemplates() (a moved sandbox stands on a template the cluster shares).
   */
  async moveSandboxes(o: Pick<SandboxMovesOptions, "host" | "workDir">, events: SandboxEvents): Promise<SandboxMoves | undefined> {
    if (!this.#templates) return undefined;
    const { nodeName, replicas, moveMaxMB } = this.config;
    this.#moves = await SandboxMoves.open({ ...o, nc: this.kv.nc, jsm: this.kv.jsm, maxMoveBytes: moveMaxMB * 1048576, replicas, nodeName, owners: this.owners, membership: this.membership, templates: this.#templates, logger: this.logger });
    this.#moves.follow(events);
    return this.#moves;
  }

  /** Join with the URL other nodes reach this one at (the configured one, else the one it listens on). */
  async join(listeningUrl: string): Promise<void> {
    const apiUrl = this.config.advertiseUrl ?? listeningUrl;
    await this.membership.join(apiUrl);
    followReconnects(this.kv.nc, (server) => {
      this.logger.info({ server }, "connected to NATS again; heartbeat at once");
      this.membership.beatNow();
    });
    this.logger.info({ apiUrl, servers: this.config.servers }, "joined the cluster");
  }

  async close(): Promise<void> {
    for (const stop of this.#stopSync.splice(0)) stop();
    this.#moves?.close();
    await this.#lostSweep?.close();
    await this.#templates?.close();
    await this.#teamSync?.flush();
    this.#teamSync?.close();
    await this.membership.close();
    this.owners.close();
    await this.kv.close();
  }
}
