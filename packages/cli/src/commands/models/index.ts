// `burrow models list|add|remove|hosts`: the model gateway's providers through /burrow/v1/models (keys never
// printed, since the API never answers them), and the provider host names it answers for sandboxes.
import { apiRequest } from "../../api.js";
import { defineCommand, usageError, type CommandGroup } from "../../command.js";
import { clientConnection } from "../../connection.js";
import { optionalInteger } from "../../numbers.js";
import { printJson } from "../../output.js";

interface ProviderView {
  name: string;
  kind: string;
  baseUrl: string;
  apiKey: { source: string; secret?: string };
  models: string[];
  priority: number;
  weight: number;
  circuit: string;
}

const modelsList = defineCommand({
  name: "list",
  summary: "List model providers (by priority) and where host clients and sandboxes reach the gateway",
  options: { json: { type: "boolean", description: "Print JSON" } },
  async run({ values, env }) {
    const connection = clientConnection(env);
    const providers = (await apiRequest(connection, "GET", "/burrow/v1/models/providers")).body as ProviderView[];
    const gateway = (await apiRequest(connection, "GET", "/burrow/v1/models/gateway")).body as { url: string | null; sandboxUrl?: string | null };
    if (values.json) return printJson({ gateway: gateway.url, sandboxGateway: gateway.sandboxUrl ?? null, providers });
    process.stdout.write(`gateway\t${gateway.url ?? "-"}\n`);
    process.stdout.write(`sandboxes\t${gateway.sandboxUrl ?? "-"}\n`);
    for (const p of providers) {
      const key = p.apiKey.source === "secret" ? `secret:${p.apiKey.secret}` : p.apiKey.source;
      process.stdout.write(`${p.name}\t${p.kind}\t${p.baseUrl}\tpriority=${p.priority}\tweight=${p.weight}\tkey=${key}\tcircuit=${p.circuit}\t${p.models.join(",")}\n`);
    }
  },
});

const modelsAdd = defineCommand({
  name: "add",
  summary: "Add a model provider: NAME --kind openai|anthropic --base-url URL --models a,b [--key K | --key-secret NAME]",
  args: "NAME",
  minArgs: 1,
  maxArgs: 1,
  options: {
    kind: { type: "string", description: "openai or anthropic" },
    "base-url": { type: "string", description: "OpenAI-compatible: up to /v1; Anthropic: the API root" },
    models: { type: "string", description: "Comma-separated model names (* for any)" },
    key: { type: "string", description: "The provider's API key (stored encrypted)" },
    "key-secret": { type: "string", description: "Name of a secret holding the provider's API key" },
    priority: { type: "string", description: "Lower is tried first (default 0)" },
    weight: { type: "string", description: "Share among providers of one priority (default 1)" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    const v = values as Record<string, string | boolean | undefined>;
    if (!v.kind || !v["base-url"] || !v.models) throw usageError("models add needs --kind, --base-url and --models");
    if (v.key && v["key-secret"]) throw usageError("give --key or --key-secret, not both");
    const priority = optionalInteger("--priority", v.priority as string | undefined);
    const weight = optionalInteger("--weight", v.weight as string | undefined, { min: 1 });
    const body = {
      name: positionals[0],
      kind: v.kind,
      baseUrl: v["base-url"],
      models: String(v.models).split(",").map((m) => m.trim()).filter(Boolean),
      ...(v.key ? { apiKey: v.key } : v["key-secret"] ? { apiKey: { secret: v["key-secret"] } } : {}),
      ...(priority !== undefined ? { priority } : {}),
      ...(weight !== undefined ? { weight } : {}),
    };
    const res = await apiRequest(clientConnection(env), "POST", "/burrow/v1/models/providers", { body });
    if (values.json) printJson(res.body);
    else process.stdout.write(`${(res.body as ProviderView).name}\tadded\n`);
  },
});

const modelsRemove = defineCommand({
  name: "remove",
  summary: "Remove model providers (exit code 1 if one was not found)",
  args: "NAME...",
  minArgs: 1,
  maxArgs: Number.POSITIVE_INFINITY,
  options: {},
  async run({ positionals, env }) {
    const connection = clientConnection(env);
    for (const name of positionals) {
      const res = await apiRequest(connection, "DELETE", `/burrow/v1/models/providers/${encodeURIComponent(name)}`, { expect: [404] });
      process.stdout.write(`${name}\t${res.status === 404 ? "not found" : "removed"}\n`);
      if (res.status === 404) process.exitCode = 1;
    }
  },
});

const modelsHosts = defineCommand({
  name: "hosts",
  summary: "Show or set the provider host names sandboxes' HTTPS to is answered by the gateway (e.g. api.openai.com)",
  args: "[HOST...]",
  minArgs: 0,
  maxArgs: Number.POSITIVE_INFINITY,
  options: {
    clear: { type: "boolean", description: "Answer none of them any more" },
    json: { type: "boolean", description: "Print JSON" },
  },
  async run({ values, positionals, env }) {
    if (values.clear && positionals.length > 0) throw usageError("give HOST... or --clear, not both");
    const connection = clientConnection(env);
    const set = values.clear || positionals.length > 0;
    const res = set
      ? await apiRequest(connection, "PUT", "/burrow/v1/models/settings", { body: { providerHosts: values.clear ? [] : positionals } })
      : await apiRequest(connection, "GET", "/burrow/v1/models/settings");
    const hosts = (res.body as { providerHosts?: string[] }).providerHosts ?? [];
    if (values.json) printJson(hosts);
    else for (const host of hosts) process.stdout.write(`${host}\n`);
  },
});

export const modelCommands: CommandGroup = {
  name: "models",
  summary: "Configure the model gateway's providers",
  commands: [modelsList, modelsAdd, modelsRemove, modelsHosts],
};
