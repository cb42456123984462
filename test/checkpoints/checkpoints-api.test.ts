// Checkpoint trees end to end: the Burrow SDK (on top of the official e2b SDK) and raw HTTP against the real server
// of the global setup. Checkpoint, tree, rollback in place (same id, envd answering with the same token), branch,
// delete with dependants (409) and with cascade, events on the bus, 404s and 400s in E2B's error shape.
import { afterAll, describe, expect, inject, it } from "vitest";
import { Sandbox as E2bSandbox } from "e2b";
import { BurrowApiError, BusClient, Checkpoint, Sandbox, type SandboxEvent } from "@burrow/sdk";

const env = inject("burrow");
const opts = { apiKey: env.apiKey, apiUrl: env.apiUrl, sandboxUrl: env.sandboxUrl, debug: false };
const started: string[] = [];

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${env.apiUrl}/burrow/v1${path}`, {
    method,
    headers: { "x-api-key": env.apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

async function create(): Promise<Sandbox> {
  const sandbox = await Sandbox.create("base", opts);
  started.push(sandbox.sandboxId);
  return sandbox;
}

afterAll(async () => {
  await Promise.allSettled(started.map((id) => E2bSandbox.kill(id, opts)));
});

describe("checkpoint trees over HTTP and the SDK", () => {
  it("checkpoints, lists the tree, rolls back in place, branches and deletes, with events on the bus", async () => {
    const sandbox = await create();
    const bus = new BusClient({ baseUrl: env.apiUrl, apiKey: env.apiKey });
    const events = await bus.events.subscribe({ sandboxId: sandbox.sandboxId, category: "lifecycle" });
    const seen: SandboxEvent[] = [];
    const pump = (async () => {
      for await (const e of events) seen.push(e);
    })();

    await sandbox.files.write("/home/user/state.txt", "one");
    const first = await sandbox.checkpoint("first");
    expect(first).toMatchObject({ sandboxId: sandbox.sandboxId, parentId: null, label: "first", contents: "files" });
    await sandbox.files.write("/home/user/state.txt", "two");
    await sandbox.files.write("/home/user/later.txt", "later");
    const second = await sandbox.checkpoint();
    expect(second.parentId).toBe(first.checkpointId);
    expect(second.label).toBeUndefined();

    const tree = await sandbox.checkpoints();
    expect(tree.currentId).toBe(second.checkpointId);
    expect(tree.checkpoints.map((c) => [c.checkpointId, c.parentId, c.current])).toEqual([
      [first.checkpointId, null, false],
      [second.checkpointId, first.checkpointId, true],
    ]);
    const raw = await api("GET", `/sandboxes/${sandbox.sandboxId}/checkpoints`);
    expect(raw.status).toBe(200);
    expect(raw.body.contents).toBe("files");
    expect(raw.body.checkpoints[0]).toMatchObject({ checkpointID: first.checkpointId, sandboxID: sandbox.sandboxId, parentID: null, label: "first" });
    expect(typeof raw.body.checkpoints[0].sizeBytes).toBe("number");

    // Rollback: same sandbox id, envd answers with the same token, the first checkpoint's files exactly.
    await sandbox.rollback(first.checkpointId);
    const again = await Sandbox.connect(sandbox.sandboxId, opts);
    expect(await sandbox.files.read("/home/user/state.txt")).toBe("one");
    expect(await again.files.exists("/home/user/later.txt")).toBe(false);
    expect((await sandbox.commands.run("echo alive")).stdout).toBe("alive\n");
    expect((await sandbox.checkpoints()).currentId).toBe(first.checkpointId);

    // Branch from the second checkpoint: connected sandboxes with its files, registered like any sandbox.
    const children = await Checkpoint.branch(second.checkpointId, 2, opts);
    expect(children.map((c) => c.error)).toEqual([undefined, undefined]);
    for (const child of children) {
      started.push(child.sandbox!.sandboxId);
      expect(await child.sandbox!.files.read("/home/user/state.txt")).toBe("two");
      expect(await child.sandbox!.files.read("/home/user/later.txt")).toBe("later");
      expect((await E2bSandbox.getInfo(child.sandbox!.sandboxId, opts)).state).toBe("running");
    }
    const grandchild = await children[0]!.sandbox!.checkpoint("in a branch");
    expect(grandchild.parentId).toBe(second.checkpointId);

    // Deleting: 409 while checkpoints descend from it, then cascade.
    const refused = await api("DELETE", `/checkpoints/${first.checkpointId}`);
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({ code: 409, message: expect.stringContaining("dependant") });
    await expect(sandbox.deleteCheckpoint(first.checkpointId)).rejects.toMatchObject({ status: 409 });
    expect((await Checkpoint.get(second.checkpointId, opts)).checkpointId).toBe(second.checkpointId);
    const deleted = await sandbox.deleteCheckpoint(first.checkpointId, { cascade: true });
    expect(new Set(deleted)).toEqual(new Set([first.checkpointId, second.checkpointId, grandchild.checkpointId]));
    expect(deleted.at(-1)).toBe(first.checkpointId);
    expect((await api("GET", `/checkpoints/${second.checkpointId}`)).status).toBe(404);
    expect((await sandbox.checkpoints()).checkpoints).toEqual([]);

    await expect.poll(() => seen.map((e) => e.type), { timeout: 10_000 }).toEqual(
      expect.arrayContaining(["checkpoint_created", "rolled_back", "checkpoint_deleted"]),
    );
    const created = seen.filter((e) => e.type === "checkpoint_created").map((e) => (e as { checkpointId?: string }).checkpointId);
    expect(created).toEqual([first.checkpointId, second.checkpointId]);
    events.close();
    await pump;
  });

  it("answers 404 for unknown sandboxes and checkpoints and 400 for bad bodies, in E2B's error shape", async () => {
    const sandbox = await create();
    for (const [method, path, body] of [
      ["POST", "/sandboxes/nosuchsandbox/checkpoints", {}],
      ["GET", "/sandboxes/nosuchsandbox/checkpoints", undefined],
      ["POST", "/sandboxes/nosuchsandbox/rollback", { checkpointID: "x" }],
      ["GET", "/checkpoints/nosuchcheckpoint", undefined],
      ["POST", "/checkpoints/nosuchcheckpoint/branch", { count: 1 }],
      ["DELETE", "/checkpoints/nosuchcheckpoint", undefined],
      ["POST", `/sandboxes/${sandbox.sandboxId}/rollback`, { checkpointID: "nosuchcheckpoint" }],
    ] as const) {
      const res = await api(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual({ code: 404, message: expect.any(String) });
    }
    const checkpoint = await sandbox.checkpoint();
    for (const [method, path, body] of [
      ["POST", `/sandboxes/${sandbox.sandboxId}/checkpoints`, { label: 5 }],
      ["POST", `/sandboxes/${sandbox.sandboxId}/checkpoints`, { label: "x".repeat(257) }],
      ["POST", `/sandboxes/${sandbox.sandboxId}/checkpoints`, "{not json"],
      ["POST", `/sandboxes/${sandbox.sandboxId}/rollback`, {}],
      ["POST", `/sandboxes/${sandbox.sandboxId}/rollback`, { checkpointID: 7 }],
      ["POST", `/checkpoints/${checkpoint.checkpointId}/branch`, {}],
      ["POST", `/checkpoints/${checkpoint.checkpointId}/branch`, { count: 0 }],
      ["POST", `/checkpoints/${checkpoint.checkpointId}/branch`, { count: 21 }],
      ["POST", `/checkpoints/${checkpoint.checkpointId}/branch`, { count: "2" }],
      ["DELETE", `/checkpoints/${checkpoint.checkpointId}?cascade=maybe`, undefined],
    ] as const) {
      const res = await api(method, path, body);
      expect(res.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(400);
      expect(res.body).toEqual({ code: 400, message: expect.any(String) });
    }
    // A checkpoint of another tree is refused for rollback (400), and the server still answers afterwards.
    const other = await create();
    const foreign = await other.checkpoint();
    const outside = await api("POST", `/sandboxes/${sandbox.sandboxId}/rollback`, { checkpointID: foreign.checkpointId });
    expect(outside.status).toBe(400);
    await expect(Checkpoint.get("nosuchcheckpoint", opts)).rejects.toBeInstanceOf(BurrowApiError);
    expect(await other.deleteCheckpoint(foreign.checkpointId)).toEqual([foreign.checkpointId]);
    expect(await sandbox.deleteCheckpoint(checkpoint.checkpointId)).toEqual([checkpoint.checkpointId]);
  });
});
