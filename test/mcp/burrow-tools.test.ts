// Burrow's own MCP server with @modelcontextprotocol/sdk's client, over stdio (`burrow mcp`) and streamable HTTP
// (/mcp on the server): the tool list, a sandbox's life (create, run a command with its output streamed as progress,
// write and read files, list them, read them as resources, the logs resource, kill), and bad arguments answered
// with tool errors while the server keeps serving. Real sandboxes on the global test server.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import { call, connectBurrowMcp, data, textOf, type TransportKind } from "./mcp-clients.js";

const env = inject("burrow");

const EXPECTED_TOOLS = [
  "bus_publish", "bus_read", "create_sandbox", "fork_sandbox", "get_sandbox", "kill_process", "kill_sandbox", "list_files",
  "list_processes", "list_sandboxes", "list_snapshots", "pause_sandbox", "queue_enqueue", "queue_take", "read_file",
  "restore_snapshot", "resume_sandbox", "run_code", "run_command", "set_sandbox_timeout", "snapshot_sandbox", "watch_files",
  "write_file",
];

describe.each(["stdio", "http"] as TransportKind[])("Burrow MCP server over %s", (kind) => {
  let client: Client;
  const created: string[] = [];

  beforeAll(async () => {
    client = await connectBurrowMcp(env, kind);
  });

  afterAll(async () => {
    for (const id of created) await call(client, "kill_sandbox", { sandboxId: id }, { allowError: true }).catch(() => undefined);
    await client?.close();
  });

  test("lists Burrow's tools and resource templates", async () => {
    expect(client.getServerVersion()?.name).toBe("burrow");
    const names = (await client.listTools()).tools.map((t) => t.name).sort();
    expect(names).toEqual(EXPECTED_TOOLS);
    const templates = (await client.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate).sort();
    expect(templates).toEqual(["burrow://sandboxes/{sandboxId}/files/{+path}", "burrow://sandboxes/{sandboxId}/logs"]);
  });

  test("a sandbox's life: create, run a command, write and read files, resources, kill", { timeout: 180_000 }, async () => {
    const { sandboxId } = data<{ sandboxId: string }>(await call(client, "create_sandbox", { template: "base", metadata: { suite: `mcp-${kind}` } }));
    created.push(sandboxId);
    expect(sandboxId).toMatch(/^[a-z0-9]+$/);

    const listed = data<{ sandboxes: { sandboxId: string; state: string }[] }>(await call(client, "list_sandboxes", { metadata: { suite: `mcp-${kind}` } }));
    expect(listed.sandboxes.map((s) => s.sandboxId)).toEqual([sandboxId]);

    const progress: string[] = [];
    const ran = data(
      await call(client, "run_command", { sandboxId, command: "echo hello; echo oops >&2; whoami; exit 3" }, { onprogress: (m) => progress.push(m) }),
    );
    expect(ran).toEqual({ exitCode: 3, stdout: "hello\nuser\n", stderr: "oops\n" });
    expect(progress.join("")).toContain("hello");
    expect(progress.join("")).toContain("stderr: oops");

    const asRoot = data(await call(client, "run_command", { sandboxId, command: "id -u", user: "root" }));
    expect(asRoot).toMatchObject({ exitCode: 0, stdout: "0\n" });

    await call(client, "write_file", { sandboxId, path: "/home/user/notes/hello.txt", content: "héllo from MCP\n" });
    const read = data(await call(client, "read_file", { sandboxId, path: "/home/user/notes/hello.txt" }));
    expect(read).toMatchObject({ encoding: "utf8", content: "héllo from MCP\n", size: 16 });
    const bytes = Buffer.from([0, 255, 1, 254, 10]);
    await call(client, "write_file", { sandboxId, path: "notes/blob.bin", content: bytes.toString("base64"), encoding: "base64" });
    const blob = data<{ encoding: string; content: string }>(await call(client, "read_file", { sandboxId, path: "/home/user/notes/blob.bin" }));
    expect(blob.encoding).toBe("base64");
    expect(Buffer.from(blob.content, "base64")).toEqual(bytes);
    // The command sees what the tools wrote.
    expect(data(await call(client, "run_command", { sandboxId, command: "cat notes/hello.txt" }))).toMatchObject({ stdout: "héllo from MCP\n" });

    const listing = data<{ entries: { name: string; type: string; size: number }[] }>(await call(client, "list_files", { sandboxId, path: "/home/user/notes" }));
    expect(listing.entries.map((e) => [e.name, e.type, e.size]).sort()).toEqual([["blob.bin", "file", 5], ["hello.txt", "file", 16]]);

    const resource = await client.readResource({ uri: `burrow://sandboxes/${sandboxId}/files/home/user/notes/hello.txt` });
    expect(resource.contents[0]).toMatchObject({ text: "héllo from MCP\n" });
    const logs = await client.readResource({ uri: `burrow://sandboxes/${sandboxId}/logs` });
    const logText = (logs.contents[0] as { text: string }).text;
    expect(logText).toContain("$ echo hello; echo oops >&2; whoami; exit 3");
    expect(logText).toContain("exit 3");

    // A background command: the pid at once, its output in the logs resource when it comes.
    const bg = data<{ pid: number }>(await call(client, "run_command", { sandboxId, command: "sleep 0.2; echo from-background", background: true }));
    expect(bg.pid).toBeGreaterThan(0);
    await expect
      .poll(async () => ((await client.readResource({ uri: `burrow://sandboxes/${sandboxId}/logs` })).contents[0] as { text: string }).text, { timeout: 20_000 })
      .toContain(`[pid ${bg.pid}] from-background`);

    expect(data(await call(client, "kill_sandbox", { sandboxId }))).toEqual({ sandboxId, killed: true });
    const gone = await call(client, "get_sandbox", { sandboxId }, { allowError: true });
    expect(gone.isError).toBe(true);
    expect(textOf(gone)).toMatch(/^not_found: /);
  });

  test("bad arguments and unknown sandboxes are tool errors; the server goes on serving", { timeout: 120_000 }, async () => {
    const missing = await call(client, "run_command", { command: "true" }, { allowError: true });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toContain("Input validation error");
    expect(textOf(missing)).toContain("sandboxId");

    const wrongType = await call(client, "create_sandbox", { timeoutSeconds: "soon" }, { allowError: true });
    expect(wrongType.isError).toBe(true);
    expect(textOf(wrongType)).toContain("timeoutSeconds");

    const badEnum = await call(client, "run_code", { sandboxId: "x", code: "1", language: "cobol" }, { allowError: true });
    expect(badEnum.isError).toBe(true);

    const unknownSandbox = await call(client, "read_file", { sandboxId: "nosuchsandbox0000", path: "/etc/hostname" }, { allowError: true });
    expect(unknownSandbox.isError).toBe(true);
    expect(textOf(unknownSandbox)).toMatch(/^not_found: /);

    const unknownTemplate = await call(client, "create_sandbox", { template: "no-such-template" }, { allowError: true });
    expect(unknownTemplate.isError).toBe(true);
    expect(textOf(unknownTemplate)).toMatch(/^not_found: .*no-such-template/);

    // run_code outside a code-interpreter sandbox: nothing serves its port there, and the error says what to use.
    const { sandboxId } = data<{ sandboxId: string }>(await call(client, "create_sandbox", {}));
    created.push(sandboxId);
    const notInterpreter = await call(client, "run_code", { sandboxId, code: "1" }, { allowError: true });
    expect(notInterpreter.isError).toBe(true);
    expect(textOf(notInterpreter)).toContain("run_code needs a sandbox created from the 'code-interpreter-v1' template");

    const unknownTool = await call(client, "no_such_tool", {}, { allowError: true });
    expect(unknownTool.isError).toBe(true);

    // Still serving.
    expect((await client.listTools()).tools.length).toBe(EXPECTED_TOOLS.length);
  });
});

describe("/mcp over HTTP: the API key and raw requests", () => {
  test("a wrong or missing API key is refused in E2B's error shape", async () => {
    await expect(connectBurrowMcp(env, "http", "e2b_wrong_key")).rejects.toThrow(/invalid API key/);
    const res = await fetch(`${env.apiUrl}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ code: 401, message: expect.stringContaining("missing API key") });
  });

  test("the key also works as a bearer token, and a body that is not JSON is a parse error", async () => {
    const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
    const res = await fetch(`${env.apiUrl}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.apiKey}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify(init),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"name":"burrow"');
    const bad = await fetch(`${env.apiUrl}/mcp`, {
      method: "POST",
      headers: { "x-api-key": env.apiKey, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: "{not json",
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: number } }).error.code).toBe(-32700);
  });

  test("malformed JSON-RPC is answered with an error, and the endpoint goes on serving", async () => {
    const post = (body: string, method = "POST") =>
      fetch(`${env.apiUrl}/mcp`, {
        method,
        headers: { "x-api-key": env.apiKey, "content-type": "application/json", accept: "application/json, text/event-stream" },
        ...(method === "POST" ? { body } : {}),
      });
    for (const body of ["{}", "[]", "null", "42", '"text"', '{"jsonrpc":"2.0","id":1}', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}']) {
      const res = await post(body);
      expect(res.status, body).toBeGreaterThanOrEqual(200);
      expect(res.status, body).toBeLessThan(500);
      await res.arrayBuffer();
    }
    const get = await post("", "GET");
    expect(get.status).toBe(405);
    await get.arrayBuffer();
    const client = await connectBurrowMcp(env, "http");
    try {
      expect((await client.listTools()).tools.length).toBe(EXPECTED_TOOLS.length);
    } finally {
      await client.close();
    }
  });
});
