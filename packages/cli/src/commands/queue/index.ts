// burrow queue list | show NAME | dead-letters NAME | requeue NAME SEQ|--all | drop NAME SEQ|--all: operating the
// bus's work queues over REST (GET /burrow/v1/queues…). Reading a queue neither creates it nor touches its consumers.
// Plain REST (api.ts) rather than the SDK's BusClient.queue: the SDK's fetch and its e2b import cost the CLI's start-up
// hundreds of milliseconds; the wire types are shared with the server and the SDK through @burrow/protocol.
import { Code, type DeadLetterPageWire, type DroppedAllWire, type QueueDepthWire, type RequeuedAllWire } from "@burrow/protocol";
import { apiRequest } from "../../api.js";
import { CliError } from "../../cli-error.js";
import { defineCommand, type CommandGroup } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { printJson, printRows } from "../../output.js";

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
    const queues = (await apiRequest(clientConnection(env), "GET", "/burrow/v1/queues")).body as QueueDepthWire[];
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
    const q = (await apiRequest(clientConnection(env), "GET", queuePath(positionals[0]!))).body as QueueDepthWire;
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
    const page = (await apiRequest(clientConnection(env), "GET", `${queuePath(positionals[0]!)}/dead-letters`, { query })).body as DeadLetterPageWire;
    if (values.json) return printJson(page);
    printRows(
      page.items.map((d) => ({ ...d, payload: d.data ?? `(${Buffer.from(d.dataBase64, "base64").length} bytes, binary)` })),
      ["seq", "reason", "attempts", "lastError", "time", "payload"],
      false,
    );
    if (page.next !== null) process.stdout.write(`(${page.total} in all; more with --after ${page.next})\n`);
  },
});

/** requeue and drop: one dead letter by SEQ, or --all of them, each with its own call and its own line of output. */
function deadLetterAction(verb: "requeue" | "drop", summary: string, all: string, calls: {
  one: (base: string, seq: number) => [method: string, path: string, line: (body: unknown) => string];
  every: (base: string) => [method: string, path: string, line: (body: unknown) => string];
}) {
  return defineCommand({
    name: verb,
    summary,
    args: "NAME [SEQ]",
    minArgs: 1,
    maxArgs: 2,
    options: {
      all: { type: "boolean", description: all },
      json: { type: "boolean", description: "Print JSON" },
    },
    async run({ values, positionals, env }) {
      const which = target(positionals, values.all, verb);
      const base = `${queuePath(positionals[0]!)}/dead-letters`;
      const [method, path, line] = which === "all" ? calls.every(base) : calls.one(base, which);
      const { body } = await apiRequest(clientConnection(env), method, path);
      if (values.json) return printJson(body ?? { dropped: 1 });
      process.stdout.write(`${line(body)}\n`);
    },
  });
}

const queueRequeue = deadLetterAction("requeue", "Put a dead letter (or --all of them) back on its queue as a new message", "Requeue every dead letter of the queue", {
  one: (base, seq) => ["POST", `${base}/${seq}/requeue`, (body) => `requeued ${seq} as message ${(body as { seq: number }).seq}`],
  every: (base) => ["POST", `${base}/requeue`, (body) => `requeued ${(body as RequeuedAllWire).requeued}`],
});

const queueDrop = deadLetterAction("drop", "Delete a dead letter (or --all of them) for good", "Drop every dead letter of the queue", {
  one: (base, seq) => ["DELETE", `${base}/${seq}`, () => `dropped ${seq}`],
  every: (base) => ["DELETE", base, (body) => `dropped ${(body as DroppedAllWire).dropped}`],
});

export const queueCommands: CommandGroup = {
  name: "queue",
  summary: "Operate the bus's work queues: depth, dead letters, requeue, drop",
  commands: [queueList, queueShow, queueDeadLetters, queueRequeue, queueDrop],
};
