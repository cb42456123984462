// MCP benchmarks against a real in-process Burrow server with Burrow's MCP server mounted at /mcp (as `burrow up`
// mounts it), each figure beside a baseline measured in the same run:
// - a tool call round trip over streamable HTTP, `run_command` of `true` in a running sandbox, p50, beside the same
//   command through the official e2b SDK (commands.run('true')) on the same sandbox;
// - `tools/list` over streamable HTTP, beside an MCP `ping` on the same client (the protocol's floor).
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Sandbox } from "e2b";
import { envdRuntimeFiles } from "@burrow/envd";
import { createMcpHttpHandler } from "@burrow/mcp";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { pino } from "pino";
import { median, report, sample } from "./lib/stats.mjs";
import { freeSubnet } from "./lib/host.mjs";

const RUNS = Number(process.env.BENCH_MCP_RUNS ?? 200);
const WARMUP = 10;

export async function runMcpBenchmarks() {
  const stateDir = mkdtempSync("/var/tmp/burrow-bench-mcp-");
  const instance = `m${randomBytes(2).toString("hex")}`;
  // 10.219/16: away from the test instances (10.200-249) and the other benchmarks' subnets.
  const orchestrator = await LocalOrchestrator.create({
    config: { stateDir, instance, subnet: freeSubnet(), pool: { template: "base", size: 1 } },
    envd: envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  const server = await startServer({ host: "127.0.0.1", port: 0, stateDir }, {
    orchestrator,
    logger: pino({ level: "warn" }),
    mounts: [{ path: "/mcp", handle: createMcpHttpHandler() }],
  });
  const url = `http://127.0.0.1:${server.port}`;
  const apiKey = readFileSync(join(stateDir, "api-key"), "utf8").trim();
  const opts = { apiKey, apiUrl: url, sandboxUrl: url };
  const client = new Client({ name: "burrow-bench", version: "1.0.0" });
  let sandbox;
  try {
    process.stdout.write("\n== MCP (Burrow's MCP server over streamable HTTP at /mcp) ==\n");
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { "X-API-Key": apiKey } } }));
    sandbox = await Sandbox.create("base", opts);
    const sandboxId = sandbox.sandboxId;
    const viaMcp = async () => {
      const result = await client.callTool({ name: "run_command", arguments: { sandboxId, command: "true" } });
      if (result.isError || result.structuredContent?.exitCode !== 0) throw new Error(`run_command failed: ${JSON.stringify(result.content)}`);
    };
    const viaSdk = async () => {
      const result = await sandbox.commands.run("true");
      if (result.exitCode !== 0) throw new Error(`commands.run exited ${result.exitCode}`);
    };
    await sample(WARMUP, viaMcp);
    await sample(WARMUP, viaSdk);
    const mcp = await sample(RUNS, viaMcp);
    const sdk = await sample(RUNS, viaSdk);
    report("run_command('true') over MCP HTTP, p50", median(mcp), "ms", median(sdk), "commands.run('true') via e2b SDK");

    await sample(WARMUP, () => client.listTools());
    const list = await sample(RUNS, () => client.listTools());
    const ping = await sample(RUNS, () => client.ping());
    report("tools/list over MCP HTTP, p50", median(list), "ms", median(ping), "MCP ping");
  } finally {
    await client.close().catch(() => undefined);
    await sandbox?.kill().catch(() => undefined);
    await server.close();
    await orchestrator.shutdown();
    rmSync(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await runMcpBenchmarks();
