// Where a new sandbox goes: a pure decision over the nodes' records, so that it can be tested and measured alone.
// Power of k choices, as E2B's placement does: k nodes drawn at random among those that can take the sandbox, the
// best of them first. Drawing, rather than always taking the best node, keeps nodes that place at the same moment
// from all choosing the same one while the records they read are a heartbeat old.
//
// A node can take a sandbox when it is up, not cordoned, has the template (or the template is in the cluster's
// bucket, which it then fetches: cluster-templates.ts) and has room. Among those, one with a warm sandbox of the
// template wins (a pooled create is several times faster than a cold one); then the lower share of the node's room
// already in use, a node that would have to fetch the template counted as FETCH_PENALTY fuller. Room is the lesser of its admission limit and what
// its free memory holds at a conservative size per sandbox, so that sandbox counts decide while memory is plentiful
// and memory decides when it is short; to which nodeLoadScore adds, when a record reports CPU, how busy the node's
// CPUs were over the last heartbeat and how many vCPUs its sandboxes hold per CPU it has.

/** A node as placement sees it: its record's figures, with what is known to have started there since. */
export interface PlacementNode {
  name: string;
  up: boolean;
  cordoned: boolean;
  /** Ids and names of its templates; undefined when its record does not say (an older version). */
  templates: ReadonlySet<string> | undefined;
  /** Live sandboxes, creates under way and made since its record included. */
  sandboxes: number;
  /** Live sandboxes its admission allows at most. */
  capacity: number;
  freeMemoryBytes: number;
  /** Ready pooled sandboxes of the requested template (0: a cold create). */
  warm: number;
  /** Its CPUs, their use and the vCPUs committed there (absent from older records: counts alone decide). */
  cpu?: { cpus: number; busy?: number | undefined; committedVcpu: number } | undefined;
}

export interface PlacementRequest {
  /** The names the requested template goes by (the reference asked, its id and aliases where known). */
  template: readonly string[];
  /** The node deciding: tried last when not drawn, first among equals when drawn (no hop). */
  self: string;
  /** Nodes drawn. @default PLACEMENT_CHOICES */
  choices?: number;
  /** The template is in the cluster's bucket: a node without it can fetch it (at FETCH_PENALTY). */
  fetchable?: boolean;
  /** In [0, 1). @default Math.random */
  random?: () => number;
  /** Memory a node keeps free: below it a node has no room. @default MIN_FREE_MEMORY_BYTES */
  minFreeMemoryBytes?: number;
  /** Memory counted per sandbox when turning free memory into room. @default BYTES_PER_SANDBOX */
  bytesPerSandbox?: number;
}

export type SkipReason = "down" | "cordoned" | "no_template" | "templates_unknown" | "full";

export interface PlacementPlan {
  /** Nodes to try in order: the drawn ones best first, then the others best first, this node last unless drawn. */
  order: string[];
  /** Nodes that cannot take the sandbox, and why. */
  skipped: Array<{ node: string; why: SkipReason }>;
}

export const PLACEMENT_CHOICES = 3;
/** The admission's default floor (BURROW_MIN_AVAILABLE_MEMORY_MB): a node below it refuses creates anyway. */
export const MIN_FREE_MEMORY_BYTES = 512 * 1024 * 1024;
/** Far above an idle sandbox (~8 MB) and below a busy one's limit: room shrinks before memory runs out. */
export const BYTES_PER_SANDBOX = 64 * 1024 * 1024;
/**
 * vCPUs committed per host CPU that count as one full share of load: sandboxes idle most of the time (agents wait on
 * models), so a host runs several vCPUs per CPU before their demand meets its CPUs.
 */
export const VCPU_PER_CPU = 4;

/**
 * A node's load for placement (lower is better), in [0, 1] like the share of room in use it was before CPU counted,
 * so that other terms added to it (a template fetch's penalty) keep their weight: without CPU figures, the share of
 * its room in use; with them, the mean of that share, its CPUs' busy share over the last heartbeat and its committed
 * vCPUs per CPU over VCPU_PER_CPU, brought into [0, 1) as c / (1 + c). A mean rather than the largest term: each keeps
 * telling nodes apart when another is equal (nodes on one host see the same busy share; their vCPUs then decide).
 */
export function nodeLoadScore(node: Pick<PlacementNode, "sandboxes" | "cpu">, room: number): number {
  const used = node.sandboxes / Math.max(1, node.sandboxes + room);
  const cpu = node.cpu;
  if (!cpu || cpu.cpus <= 0) return used;
  const committed = cpu.committedVcpu / (cpu.cpus * VCPU_PER_CPU);
  return (used + (cpu.busy ?? 0) + committed / (1 + committed)) / 3;
}
/** vCPUs of a sandbox when a node's record gives no average to go by (E2B's default cpuCount). */
const DEFAULT_SANDBOX_VCPU = 2;

/**
 * A node's CPU figures with the sandboxes it has gained (or lost) since its record: `recorded` sandboxes held the
 * record's vCPUs, `now` (its record's count plus the creates seen since, or this node's live count) hold as many more
 * as the record's average per sandbox. Without this the vCPU term stays as the record says for a whole heartbeat,
 * and a burst of creates all goes to the node that looked idlest when it last wrote its record (seen with three nodes
 * on one host: 0 / 7 / 33 of 40).
 */
export function cpuSince<C extends { committedVcpu: number }>(cpu: C | undefined, recorded: number, now: number): C | undefined {
  if (!cpu || now === recorded) return cpu;
  const perSandbox = recorded > 0 && cpu.committedVcpu > 0 ? cpu.committedVcpu / recorded : DEFAULT_SANDBOX_VCPU;
  return { ...cpu, committedVcpu: Math.max(0, cpu.committedVcpu + (now - recorded) * perSandbox) };
}

/** Added to the share of room in use of a node that would fetch the template: a fetch costs seconds, not a ban. */
export const FETCH_PENALTY = 0.5;

interface Scored {
  node: PlacementNode;
  warm: boolean;
  load: number;
}

function hasTemplate(node: PlacementNode, template: readonly string[]): boolean {
  return node.templates !== undefined && template.some((name) => node.templates!.has(name));
}

function skipReason(node: PlacementNode, request: PlacementRequest, room: number): SkipReason | undefined {
  if (!node.up) return "down";
  if (node.cordoned) return "cordoned";
  if (!node.templates) return "templates_unknown";
  if (!request.fetchable && !hasTemplate(node, request.template)) return "no_template";
  if (room <= 0) return "full";
  return undefined;
}

export function placeCreate(nodes: readonly PlacementNode[], request: PlacementRequest): PlacementPlan {
  const random = request.random ?? Math.random;
  const choices = Math.max(1, request.choices ?? PLACEMENT_CHOICES);
  const floor = request.minFreeMemoryBytes ?? MIN_FREE_MEMORY_BYTES;
  const perSandbox = request.bytesPerSandbox ?? BYTES_PER_SANDBOX;
  const skipped: PlacementPlan["skipped"] = [];
  const warm: Scored[] = [];
  const cold: Scored[] = [];
  for (const node of nodes) {
    const room = Math.min(node.capacity - node.sandboxes, Math.floor((node.freeMemoryBytes - floor) / perSandbox));
    const why = skipReason(node, request, room);
    if (why) {
      skipped.push({ node: node.name, why });
      continue;
    }
    const penalty = hasTemplate(node, request.template) ? 0 : FETCH_PENALTY;
    const scored = { node, warm: node.warm > 0, load: nodeLoadScore(node, room) + penalty };
    (scored.warm ? warm : cold).push(scored);
  }
  const better = (a: Scored, b: Scored) =>
    Number(b.warm) - Number(a.warm) || a.load - b.load || Number(b.node.name === request.self) - Number(a.node.name === request.self);
  // Warm nodes are drawn first, so a warm sandbox anywhere is found however many cold nodes there are.
  const drawnWarm = draw(warm, choices, random);
  const drawnCold = draw(cold, Math.max(0, choices - drawnWarm.length), random);
  const drawn = [...drawnWarm, ...drawnCold].sort(better);
  const rest = [...warm, ...cold].filter((s) => !drawn.includes(s) && s.node.name !== request.self).sort(better);
  const self = [...warm, ...cold].find((s) => s.node.name === request.self && !drawn.includes(s));
  const order = [...drawn, ...rest, ...(self ? [self] : [])].map((s) => s.node.name);
  return { order, skipped };
}

/** `count` distinct items at random (a partial Fisher-Yates shuffle of a copy), in the order drawn. */
function draw<T>(items: readonly T[], count: number, random: () => number): T[] {
  const pool = [...items];
  const n = Math.min(count, pool.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j]!, pool[i]!];
  }
  return pool.slice(0, n);
}
