// The cluster's node records under /burrow/v1/nodes, as the nodes bucket holds them and the server answers them: what
// the server writes and the CLI and the dashboard read.

export interface NodeLoad {
  /** The host's MemAvailable, in bytes. */
  freeMemoryBytes: number;
  /** Sandboxes running on the node now. */
  runningSandboxes: number;
  /** Each pool's ready sandboxes and target, by the template it keeps (empty: no pools, or none reported). */
  poolFill: PoolFillEntry[];
  /** Live sandboxes the node admits at most (its admission's maxSandboxes). Absent in version 1 records. */
  capacity?: number;
  /**
   * Ids and names (aliases) of the templates, snapshots included, the node can start sandboxes from: template layers
   * are node-local, so placement sends a create only where its template is. Absent in version 1 records.
   */
  templates?: string[];
  /** The node's CPU (absent from older nodes, and until a node has sampled twice): placement weighs it. */
  cpu?: NodeCpu;
}

export interface NodeCpu {
  /** CPUs the host has. */
  cpus: number;
  /** Share of all CPUs' time busy over the last heartbeat interval (0..1); absent until measured. */
  busy?: number;
  /** vCPUs of the sandboxes running on it (what they may ask for, beside what they use now). */
  committedVcpu: number;
}

export interface PoolFillEntry {
  template: string;
  ready: number;
  target: number;
}

export interface NodeRecord {
  v: number;
  name: string;
  /** Where other nodes reach its API and gateway (plain http). */
  apiUrl: string;
  /** Burrow's version on the node. */
  version: string;
  /** When the node's current process joined (ISO 8601). */
  startedAt: string;
  /** Cordoned nodes take no new sandboxes (placement skips them, their create route refuses); their sandboxes keep running. */
  cordoned: boolean;
  /** The node's own clock at its last heartbeat (informative: liveness is judged by the bucket's write time). */
  heartbeatAt: string;
  load: NodeLoad;
}

/** A record as the API answers it: the record plus what the reader judged from the bucket. */
export interface NodeView extends NodeRecord {
  /** `down`: no heartbeat written within the cluster's window. */
  status: "up" | "down";
  /** When the bucket stored the record last (the NATS server's clock). */
  lastSeenAt: string;
  revision: number;
}

/** GET /burrow/v1/nodes: every node the bucket knows, and the name of the node that answered. */
export interface NodeListWire {
  self: string;
  nodes: NodeView[];
}
