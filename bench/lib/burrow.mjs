// A real Burrow for a benchmark: the orchestrator and the server in this process, on loopback, with the state
// directory, instance tag and subnet the benchmark chose (each benchmark keeps its own subnet, away from the test
// instances' 10.200-249/16), and the connection options the official SDKs take.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { envdRuntimeFiles } from "@burrow/envd";
import { LocalOrchestrator } from "@burrow/orchestrator";
import { startServer } from "@burrow/server";
import { pino } from "pino";

/**
 * @param {{ stateDir: string, instance: string, subnet: string, pool: object, programs?: object[], mounts?: object[], orchestratorLogger?: object, config?: object }} options
 *   `orchestratorLogger` receives the orchestrator's log (a benchmark reading figures it logs); silent when absent.
 *   `config`: more orchestrator settings (e.g. `dnsUpstream`).
 */
export async function startBurrow({ stateDir, instance, subnet, pool, programs, mounts, orchestratorLogger, config }) {
  const orchestrator = await LocalOrchestrator.create({
    config: { ...config, stateDir, instance, subnet, pool },
    ...(orchestratorLogger ? { logger: orchestratorLogger } : {}),
    envd: programs ? { ...envdRuntimeFiles(), programs } : envdRuntimeFiles(),
    onProgress: (line) => process.stderr.write(`[bench] ${line}\n`),
  });
  const server = await startServer({ host: "127.0.0.1", port: 0, stateDir }, {
    orchestrator,
    templates: orchestrator.templateBuilder,
    logger: pino({ level: "warn" }),
    ...(mounts ? { mounts } : {}),
  });
  const url = `http://127.0.0.1:${server.port}`;
  const apiKey = readFileSync(join(stateDir, "api-key"), "utf8").trim();
  return { orchestrator, server, url, opts: { apiKey, apiUrl: url, sandboxUrl: url } };
}

export async function stopBurrow(burrow) {
  await burrow.server.close();
  await burrow.orchestrator.shutdown();
}
