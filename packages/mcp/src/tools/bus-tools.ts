// The Burrow bus: publish on a subject, read what arrives on a subject pattern for a while, and work queues
// (enqueue; take one message, acknowledged on delivery).
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { z } from "zod";
import type { BurrowSession } from "../session.js";
import { defineTool } from "./tool-kit.js";

const subject = z.string().min(1).max(512).regex(/^[^\s]+$/, "no whitespace in subjects");
const queueName = z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/, "letters, digits, '_' and '-'");

export function registerBusTools(server: McpServer, session: BurrowSession): void {
  defineTool(
    server,
    session,
    "bus_publish",
    {
      title: "Publish on the bus",
      description: "Publish a message on a bus subject (e.g. 'agents.planner.tasks'); durable=true stores it in the stream that covers the subject.",
      input: {
        subject: subject.regex(/^[^*>]+$/, "publish to a concrete subject, without wildcards"),
        data: z.string().max(1024 * 1024).describe("Message payload (text)"),
        headers: z.record(z.string(), z.string()).optional(),
        durable: z.boolean().default(false),
      },
    },
    async (args, { session, signal }) => {
      const result = await session.bus.bus.publish(args.subject, args.data, { signal, durable: args.durable, ...(args.headers ? { headers: args.headers } : {}) });
      return { subject: args.subject, ...result };
    },
  );

  defineTool(
    server,
    session,
    "bus_read",
    {
      title: "Read from the bus",
      description:
        "Subscribe to a subject pattern ('*' matches one token, '>' the rest) and return the messages published while waiting " +
        "(until maxMessages arrive or waitSeconds pass). Sandbox events are on sbx.<template>.<sandbox>.<category>.<type>.",
      readOnly: true,
      input: {
        subject,
        waitSeconds: z.number().min(0.1).max(120).default(10),
        maxMessages: z.number().int().min(1).max(1000).default(10),
      },
    },
    async (args, { session, signal, progress }) => {
      const ac = new AbortController();
      const stop = () => ac.abort();
      signal.addEventListener("abort", stop, { once: true });
      const timer = setTimeout(stop, args.waitSeconds * 1000);
      const messages: { subject: string; data: string; encoding: "utf8" | "base64"; headers: Record<string, string> }[] = [];
      try {
        const sub = await session.bus.bus.subscribe(args.subject, { signal: ac.signal });
        try {
          for await (const m of sub) {
            const text = m.text;
            messages.push(text !== undefined ? { subject: m.subject, data: text, encoding: "utf8", headers: m.headers } : { subject: m.subject, data: Buffer.from(m.data).toString("base64"), encoding: "base64", headers: m.headers });
            void progress(`${m.subject}: ${text ?? `<${m.data.byteLength} bytes>`}`);
            if (messages.length >= args.maxMessages) break;
          }
        } finally {
          sub.close();
        }
      } catch (error) {
        if (!ac.signal.aborted) throw error;
      } finally {
        clearTimeout(timer);
        signal.removeEventListener("abort", stop);
      }
      return { subject: args.subject, messages };
    },
  );

  defineTool(
    server,
    session,
    "queue_enqueue",
    {
      title: "Add to a work queue",
      description: "Add a message to a named work queue; consumers take higher priorities first (9 before 0; default 0), oldest first within one.",
      input: { queue: queueName, data: z.string().max(1024 * 1024), priority: z.number().int().min(0).max(9).optional() },
    },
    async (args, { session, signal }) => {
      const result = await session.bus.queue.enqueue(args.queue, args.data, { signal, ...(args.priority !== undefined ? { priority: args.priority } : {}) });
      return { queue: args.queue, ...result };
    },
  );

  defineTool(
    server,
    session,
    "queue_take",
    {
      title: "Take from a work queue",
      description: "Take the next message from a work queue, waiting up to waitSeconds; it is acknowledged (removed) as it is returned.",
      input: { queue: queueName, waitSeconds: z.number().min(0).max(30).default(5) },
    },
    async (args, { session, signal }) => {
      const message = await session.bus.queue.next(args.queue, { signal, timeoutMs: Math.round(args.waitSeconds * 1000) });
      if (!message) return { queue: args.queue, message: null };
      await message.ack({ signal });
      const text = message.text;
      return {
        queue: args.queue,
        message: {
          ...(text !== undefined ? { data: text, encoding: "utf8" } : { data: Buffer.from(message.data).toString("base64"), encoding: "base64" }),
          headers: message.headers,
          priority: message.priority,
          attempt: message.attempt,
        },
      };
    },
  );
}
