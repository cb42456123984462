// burrow queue list | show NAME | dead-letters NAME | requeue NAME SEQ|--all | drop NAME SEQ|--all: operating the
// bus's work queues over REST (GET /burrow/v1/queues…). Reading a queue neither creates it nor touches its consumers.
import { Code } from "@burrow/protocol";
import { apiRequest } from "../../api.js";
import { CliError } from "../../cli-error.js";
import { defineCommand, type CommandGroup } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printJson, printRows } from "../../output.js";

interface QueueDepth {
  name: string;
  ready: number;
  inFlight: number;
  deadLetters: number;
}

interface DeadLetter {
  seq: number;
  attempts: number;
  reason: string;
  lastError: string | null;
  time: string;
  priority: number | null;
  queueSeq: number;
  headers: Record<string, string>;
  data?: string;
  dataBase64: string;
}

const queuePath = (name: string) => `/burrow/v1/queues/${encodeURIComponent(name)}`;

/** A dead letter's seq argument, or `--all`; exactly one of them. */
function target(positionals: readonly string[], all: boolean | undefined, verb: string): number | "all" {
  const seq = positionals[1];
  if (all && seq === undefined) return "all";
  if (!all && seq !== undefined && /^[1-9]\d*$/.test(seq)) return Number(seq);
  throw new CliError(Code.InvalidArgument, `queue ${verb}: give a dead letter's SEQ (a positive integer) or --all, not both`);
}

const queueList = defineCommand({
  name: "list",
  aliases: ["ls"],
  summary: "List the team's queues with their depth (ready, in flight, dead letters)",
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, env }) {
    const queues = (await apiRequest(clientConnection(env), "GET", "/burrow/v1/queues")).body as QueueDepth[];
    printRows(queues.map((q) => ({ ...q })), ["name", "ready", "inFlight", "deadLetters"], values.json ?? false);
  },
});

const queueShow = defineCommand({
  name: "show",
  summary: "Show one queue's depth",
  args: "NAME",
  minArgs: 1,
  maxArgs: 1,
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const q = (await apiRequest(clientConnection(env), "GET", queuePath(positionals[0]!))).body as QueueDepth;
    if (values.json) return printJson(q);
    process.stdout.write(`queue ${q.name}: ${q.ready} ready, ${q.inFlight} in flight, ${q.deadLetters} dead letters\n`);
  },
});

const queueDeadLetters = defineCommand({
  name: "dead-letters",
  aliases: ["dlq"],
  summary: "List a queue's dead letters, oldest first (why, attempts, the last error, the payload)",
  args: "NAME",
  minArgs: 1,
  maxArgs: 1,
  options: {
    after: { type: "string", description: "Start after this dead letter's seq (the previous page's next)" },
    limit: { type: "string", description: "At most this many (1-500, default the server's)" },
    json: { type: "boolean", description: "Print JSON ({items, total, next})" },
  },
  async run({ values, positionals, env }) {
    const query = new URLSearchParams();
    if (values.after !== undefined) query.set("after", values.after);
    if (values.limit !== undefined) query.set("limit", values.limit);
    const page = (await apiRequest(clientConnection(env), "GET", `${queuePath(positionals[0]!)}/dead-letters`, { query })).body as {
      items: DeadLetter[];
      total: number;
      next: number | null;
    };
    if (values.json) return printJson(page);
    printRows(
      page.items.map((d) => ({ ...d, payload: d.data ?? `(${Buffer.from(d.dataBase64, "base64").length} bytes, binary)` })),
      ["seq", "reason", "attempts", "lastError", "time", "payload"],
      false,
    );
    if (page.next !== null) process.stdout.write(`(${page.total} in all; more with --after ${page.next})\n`);
  },
});

const queueRequeue = defineCommand({
  name: "requeue",
  summary: "Put a dead letter (or --all of them) back on its queue as a new message",
  args: "NAME [SEQ]",
  minArgs: 1,
  maxArgs: 2,
  options: {
    all: { type: "boolean", description: "Requeue every dead letter of the queue" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    const which = target(positionals, values.all, "requeue");
    const base = `${queuePath(positionals[0]!)}/dead-letters`;
    const connection = clientConnection(env);
    if (which === "all") {
      const r = (await apiRequest(connection, "POST", `${base}/requeue`)).body as { requeued: number };
      return values.json ? printJson(r) : void process.stdout.write(`requeued ${r.requeued}\n`);
    }
    const r = (await apiRequest(connection, "POST", `${base}/${which}/requeue`)).body as { seq: number };
    return values.json ? printJson(r) : void process.stdout.write(`requeued ${which} as message ${r.seq}\n`);
  },
});

const queueDrop = defineCommand({
  name: "drop",
  summary: "Delete a dead letter (or --all of them) for good",
  args: "NAME [SEQ]",
  minArgs: 1,
  maxArgs: 2,
  options: {
    all: { type: "boolean", description: "Drop every dead letter of the queue" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    const which = target(positionals, values.all, "drop");
    const base = `${queuePath(positionals[0]!)}/dead-letters`;
    const connection = clientConnection(env);
    if (which === "all") {
      const r = (await apiRequest(connection, "DELETE", base)).body as { dropped: number };
      return values.json ? printJson(r) : void process.stdout.write(`dropped ${r.dropped}\n`);
    }
    await apiRequest(connection, "DELETE", `${base}/${which}`);
    return values.json ? printJson({ dropped: 1 }) : void process.stdout.write(`dropped ${which}\n`);
  },
});

export const queueCommands: CommandGroup = {
  name: "queue",
  summary: "Operate the bus's work queues: depth, dead letters, requeue, drop",
  commands: [queueList, queueShow, queueDeadLetters, queueRequeue, queueDrop],
};
