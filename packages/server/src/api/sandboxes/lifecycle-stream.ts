// GET /burrow/v1/lifecycle-events — the caller's team's sandbox lifecycle events as server-sent events, for the
// dashboard's live list. The bus subscribe route cannot express "every sandbox of my team" (a team key may only
// subscribe to one literal sandbox id), so this route subscribes to all lifecycle events and filters per team.
// A killed sandbox's row is already gone when its event arrives, so the sandboxes this stream has seen as the
// caller's (its list at connect time, then every later event) decide whether an end event is passed on.
import type { FastifyInstance, FastifyReply } from "fastify";
import { subscribeSandboxEvents, type Bus } from "@burrow/bus";
import type { ApiContext } from "../context.js";

const SSE_PING_MS = 15_000;

export function registerLifecycleStream(app: FastifyInstance, ctx: ApiContext, bus: Bus): void {
  app.get("/burrow/v1/lifecycle-events", async (req, reply: FastifyReply) => {
    const caller = req.caller;
    const mine = (id: string) => {
      const row = ctx.sandboxes.get(id);
      return row !== undefined && ctx.teams.visibleSandboxes(caller, [row]).length === 1;
    };
    // In a cluster, a down node's sandboxes are reported lost by another node, which has no row of theirs: the event
    // names the team from the owner record (null: the default team); without one (a record of an older node) it goes
    // to the default team. The other nodes' events on the cluster's shared bus name their sandbox's team the same way.
    const ownedElsewhere = (id: string, teamId: string | null | undefined) =>
      ctx.sandboxes.get(id) === undefined && (caller === null || caller.teamId === (teamId ?? ctx.teams.defaultTeamId));
    const controller = new AbortController();
    const events = subscribeSandboxEvents(bus, { category: "lifecycle" }, { signal: controller.signal })[Symbol.asyncIterator]();
    // Pull once so the subscription exists before the client is told it is live.
    const first = events.next();
    await bus.flush().catch((err: unknown) => {
      controller.abort();
      throw err;
    });
    const known = new Set(ctx.teams.visibleSandboxes(caller, ctx.sandboxes.list()).map((row) => row.sandboxId));
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "x-accel-buffering": "no" });
    res.write(": subscribed\n\n");
    const ping = setInterval(() => res.write(": ping\n\n"), SSE_PING_MS);
    const stop = () => controller.abort();
    req.raw.once("close", stop);
    res.once("close", stop);
    try {
      for (let next = await first; !next.done; next = await events.next()) {
        const e = next.value;
        const ended = e.type === "killed" || e.type === "timed_out";
        if (!ended && mine(e.sandboxId)) known.add(e.sandboxId);
        else if (e.category === "lifecycle" && (e.type === "lost" || e.teamId !== undefined) && ownedElsewhere(e.sandboxId, e.teamId)) known.add(e.sandboxId);
        if (!known.has(e.sandboxId)) continue;
        if (ended) known.delete(e.sandboxId);
        res.write(`event: lifecycle\ndata: ${JSON.stringify({ type: e.type, sandboxID: e.sandboxId, templateID: e.templateId })}\n\n`);
        if (res.destroyed) break;
      }
    } catch (err) {
      if (!controller.signal.aborted) req.log.warn({ err }, "lifecycle event stream failed");
    } finally {
      clearInterval(ping);
      controller.abort();
      await events.return?.(undefined);
      if (!res.destroyed) res.end();
    }
  });
}
