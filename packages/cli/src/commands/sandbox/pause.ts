import { Code } from "@burrow/protocol";
import { apiRequest } from "../../api.js";
import { CliError } from "../../cli-error.js";
import { defineCommand } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { parseInteger } from "../../numbers.js";
import { printJson } from "../../output.js";

/** E2B's default lifetime of a resumed sandbox, as the SDK's connect. */
const DEFAULT_RESUME_TIMEOUT_SEC = 300;

export const sandboxPause = defineCommand({
  name: "pause",
  summary: "Freeze sandboxes with their memory and processes; no timeout while paused",
  args: "ID...",
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, positionals, env }) {
    const connection = clientConnection(env);
    const results = await Promise.all(
      positionals.map(async (sandboxId) => {
        const res = await apiRequest(connection, "POST", `/sandboxes/${encodeURIComponent(sandboxId)}/pause`, { body: {}, expect: [404, 409] });
        if (res.status === 404) throw new CliError(Code.NotFound, `sandbox ${sandboxId} not found`);
        // 409: already paused (the SDK's pause() returns false).
        return { sandboxId, paused: res.status !== 409 };
      }),
    );
    if (values.json) printJson(results);
    else for (const r of results) process.stdout.write(`${r.sandboxId}\t${r.paused ? "paused" : "already paused"}\n`);
  },
});

export const sandboxResume = defineCommand({
  name: "resume",
  summary: "Resume paused sandboxes (running ones just get the new timeout)",
  args: "ID...",
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  options: {
    timeout: { type: "string", value: "SECONDS", description: `Lifetime from now (default ${DEFAULT_RESUME_TIMEOUT_SEC})` },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    const timeout = values.timeout === undefined ? DEFAULT_RESUME_TIMEOUT_SEC : parseInteger("--timeout", values.timeout, { min: 1 });
    const connection = clientConnection(env);
    // E2B resumes on connect: POST /v2/sandboxes/:id/connect, as the SDK's Sandbox.connect().
    const results = await Promise.all(
      positionals.map(async (sandboxId) => {
        const res = await apiRequest(connection, "POST", `/v2/sandboxes/${encodeURIComponent(sandboxId)}/connect`, { body: { timeout }, expect: [404] });
        if (res.status === 404) throw new CliError(Code.NotFound, `sandbox ${sandboxId} not found`);
        return { sandboxId, resumed: true };
      }),
    );
    if (values.json) printJson(results);
    else for (const r of results) process.stdout.write(`${r.sandboxId}\trunning\n`);
  },
});
