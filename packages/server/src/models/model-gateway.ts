// The model gateway: its own listener (so sandboxes can be sent to it alone, e.g. as the host service
// `models.burrow`), callers identified by source address (a sandbox: no key needed, the key that created it is
// charged) or by a Burrow API key (host clients: `Authorization: Bearer` or `x-api-key`, as the vendors' SDKs send).
// With providerHosts set, a third listener (TLS, certificates of the instance's egress CA chosen by SNI) answers the
// real provider names for sandboxes, registered as host services on port 443 that share it: an unmodified SDK
// calling https://api.openai.com/v1/chat/completions reaches the gateway, never the provider's own address.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createSecureContext } from "node:tls";
import type { Orchestrator } from "@burrow/orchestrator";
import type { Logger } from "pino";
import { apiKeyFromHeaders } from "../auth/credentials.js";
import type { SandboxService } from "../lifecycle/sandbox-service.js";
import type { SecretService } from "../secrets/index.js";
import type { ApiKeyStore } from "../store/api-keys.js";
import { BudgetCounters } from "./budgets.js";
import { CircuitBreakers } from "./circuit-breaker.js";
import { checkGatewaySettings, type GatewaySettings } from "./gateway-settings.js";
import { ModelProxy, type ModelCaller } from "./model-proxy.js";
import type { ModelStore, UsageRow } from "./model-store.js";
import { sendProviderError } from "./provider-errors.js";
import { ProviderRegistry } from "./provider-registry.js";
import { UpstreamAgents } from "./upstream-attempt.js";
import { UsageBuffer } from "./usage-buffer.js";

export interface ModelGatewayDeps {
  store: ModelStore;
  secrets: SecretService;
  apiKeys: ApiKeyStore;
  sandboxes: SandboxService;
  orchestrator: Orchestrator;
  logger: Logger;
  /** Certificates sandboxes trust (the egress CA), for providerHosts; without it providerHosts are not served. */
  certificates?: { certificateFor(host: string): Promise<{ key: string; cert: string }> } | undefined;
}

/** The port sandboxes' HTTPS to provider hosts goes to. */
const HTTPS_PORT = 443;

/** The host service name sandboxes call the gateway by: `http://models.burrow/v1/…`. */
export const MODEL_GATEWAY_HOST_SERVICE = "models.burrow";

export interface ModelGatewayListen {
  /** @default "127.0.0.1" */
  host?: string;
  /** 0 picks a free port. @default 0 */
  port?: number;
}

export class ModelGateway {
  readonly providers: ProviderRegistry;
  readonly #store: ModelStore;
  readonly #budgets = new BudgetCounters();
  readonly #agents = new UpstreamAgents();
  readonly #proxy: ModelProxy;
  readonly #usage: UsageBuffer;
  readonly #d: ModelGatewayDeps;
  #settings: GatewaySettings;
  #server: Server | undefined;
  #url: string | null = null;
  #sandboxServer: Server | undefined;
  #unregister: (() => Promise<void>) | undefined;
  #sandboxUrl: string | null = null;
  /** The TLS listener for providerHosts (on the sandboxes' gateway address), once there is one. */
  #providerServer: { server: Server; port: number } | undefined;
  /** Provider host name → the clean-up of its host service. */
  readonly #providerHosts = new Map<string, () => Promise<void>>();
  /** Host service changes one at a time, in order. */
  #providerSync: Promise<void> = Promise.resolve();

  constructor(deps: ModelGatewayDeps) {
    this.#d = deps;
    this.#store = deps.store;
    this.#settings = this.#store.settings();
    const breakers = new CircuitBreakers(() => this.#settings);
    this.providers = new ProviderRegistry(this.#store, deps.secrets, breakers);
    this.#usage = new UsageBuffer(this.#store, (err) => deps.logger.error({ err }, "model usage could not be recorded"));
    this.#proxy = new ModelProxy({
      providers: this.providers,
      usage: this.#usage,
      breakers,
      budgets: this.#budgets,
      agents: this.#agents,
      settings: () => this.#settings,
      logger: deps.logger,
    });
  }

  /** Where the gateway listens (http://host:port), null before listen(). */
  get url(): string | null {
    return this.#url;
  }

  /** Where sandboxes reach it (http://models.burrow), null unless serveSandboxes() registered it. */
  get sandboxUrl(): string | null {
    return this.#sandboxUrl;
  }

  settings(): GatewaySettings {
    return this.#settings;
  }

  /** Replace the settings; budgets' windows restart; providerHosts are answered (or no longer) when it resolves. */
  async setSettings(next: GatewaySettings): Promise<GatewaySettings> {
    checkGatewaySettings(next);
    this.#store.putSettings(next);
    this.#settings = next;
    this.#budgets.clear();
    await this.#syncProviderHosts();
    return next;
  }

  usage(sandboxId?: string): UsageRow[] {
    this.#usage.flush();
    return this.#store.usage(sandboxId);
  }

  async listen(opts: ModelGatewayListen = {}): Promise<void> {
    const host = opts.host ?? "127.0.0.1";
    this.#server = this.#createServer();
    const port = await listenOn(this.#server, host, opts.port ?? 0);
    this.#url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
    this.#d.logger.info({ url: this.#url }, "model gateway listening");
  }

  /**
   * Serve sandboxes as the host service `models.burrow`: a second listener on the sandboxes' gateway address (a free
   * port; sandboxes cannot reach it directly, only through the orchestrator's forward of models.burrow:80), so the
   * host-side listener can stay on loopback. Callers there are told apart by their source address, which the forward
   * keeps. Without an orchestrator that has host services, nothing happens (sandboxUrl stays null).
   */
  async serveSandboxes(signal?: AbortSignal): Promise<void> {
    const { orchestrator, logger } = this.#d;
    const gatewayAddress = orchestrator.sandboxGateway;
    if (!orchestrator.registerHostService || !gatewayAddress) {
      logger.info("model gateway: the orchestrator offers no host services; sandboxes cannot call models.burrow");
      return;
    }
    const server = this.#createServer();
    try {
      const hostPort = await listenOn(server, gatewayAddress, 0);
      this.#unregister = await orchestrator.registerHostService({ name: MODEL_GATEWAY_HOST_SERVICE, hostPort }, signal ? { signal } : undefined);
      this.#sandboxServer = server;
      this.#sandboxUrl = `http://${MODEL_GATEWAY_HOST_SERVICE}`;
      logger.info({ url: this.#sandboxUrl, listener: `${gatewayAddress}:${hostPort}` }, "model gateway serving sandboxes");
    } catch (err) {
      // The host side still works: a server without models.burrow is better than no server.
      server.close();
      logger.error({ err }, "model gateway: sandboxes cannot call models.burrow (its host service could not be set up)");
      return;
    }
    await this.#syncProviderHosts(signal);
  }

  /**
   * Make the host services of providerHosts what the settings say: each name a host service on 443 sharing the TLS
   * listener (started with the first name). Failures are logged; the names that could not be set up are tried
   * again at the next settings change.
   */
  #syncProviderHosts(signal?: AbortSignal): Promise<void> {
    const next = this.#providerSync.then(async () => {
      const { orchestrator, logger, certificates } = this.#d;
      const gatewayAddress = orchestrator.sandboxGateway;
      if (this.#sandboxServer === undefined || !orchestrator.registerHostService || !gatewayAddress) return;
      const wanted = new Set(this.#settings.providerHosts);
      for (const [name, unregister] of [...this.#providerHosts]) {
        if (wanted.has(name)) continue;
        this.#providerHosts.delete(name);
        await unregister().catch((err: unknown) => logger.warn({ err, host: name }, "model gateway: a provider host could not be removed"));
      }
      const missing = [...wanted].filter((name) => !this.#providerHosts.has(name));
      if (missing.length === 0) return;
      if (!certificates) {
        logger.warn({ hosts: missing }, "model gateway: providerHosts need the egress CA, which this server has not; they are not served");
        return;
      }
      this.#providerServer ??= await this.#listenProviderHosts(gatewayAddress);
      for (const name of missing) {
        try {
          const unregister = await orchestrator.registerHostService(
            { name, hostPort: this.#providerServer.port, port: HTTPS_PORT, hostsFile: false },
            signal ? { signal } : undefined,
          );
          this.#providerHosts.set(name, unregister);
        } catch (err) {
          logger.error({ err, host: name }, "model gateway: a provider host could not be routed to the gateway");
        }
      }
    });
    this.#providerSync = next.catch(() => undefined);
    return next;
  }

  /** The TLS listener for providerHosts: a certificate per name asked for (SNI), only for names the settings list. */
  async #listenProviderHosts(address: string): Promise<{ server: Server; port: number }> {
    const certificates = this.#d.certificates!;
    const server = createHttpsServer(
      {
        ALPNProtocols: ["http/1.1"],
        SNICallback: (name, cb) => {
          const host = name.toLowerCase();
          if (!this.#settings.providerHosts.includes(host)) {
            cb(new Error(`${host} is not a provider host of this gateway`));
            return;
          }
          certificates.certificateFor(host).then(
            ({ key, cert }) => cb(null, createSecureContext({ key, cert })),
            (err: Error) => cb(err),
          );
        },
      },
      (req, res) => this.#handle(req, res),
    );
    server.keepAliveTimeout = 65_000;
    server.on("tlsClientError", () => undefined);
    const port = await listenOn(server, address, 0);
    return { server, port };
  }

  async close(): Promise<void> {
    await this.#providerSync;
    const hosts = [...this.#providerHosts.values()];
    this.#providerHosts.clear();
    await Promise.allSettled(hosts.map((unregister) => unregister()));
    const unregister = this.#unregister;
    this.#unregister = undefined;
    this.#sandboxUrl = null;
    if (unregister) {
      try {
        await unregister();
      } catch (err) {
        this.#d.logger.warn({ err }, "model gateway: host service models.burrow could not be removed");
      }
    }
    const servers = [this.#server, this.#sandboxServer, this.#providerServer?.server].filter((s): s is Server => s !== undefined);
    this.#server = this.#sandboxServer = undefined;
    this.#providerServer = undefined;
    await Promise.all(
      servers.map((server) => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      }),
    );
    this.#agents.close();
    this.#usage.flush();
  }

  #createServer(): Server {
    return createServer({ keepAliveTimeout: 65_000 }, (req, res) => this.#handle(req, res));
  }

  #handle(req: IncomingMessage, res: ServerResponse): void {
    const caller = this.#identify(req);
    const kind = (req.url ?? "").split("?")[0]!.endsWith("/messages") ? "anthropic" : "openai";
    if (!caller) {
      req.resume();
      return sendProviderError(res, kind, 401, "unknown caller: send a Burrow API key (Authorization: Bearer or x-api-key) or call from a sandbox", { code: "invalid_api_key" });
    }
    this.#proxy.handle(req, res, caller).catch((err: unknown) => {
      this.#d.logger.error({ err }, "model gateway request failed");
      sendProviderError(res, kind, 502, "model gateway error");
    });
  }

  /** A sandbox by its source address, else a host client by its API key; undefined when neither. */
  #identify(req: IncomingMessage): ModelCaller | undefined {
    const remote = (req.socket.remoteAddress ?? "").replace(/^::ffff:/, "");
    const record = this.#d.orchestrator.listSandboxes().find((r) => r.address === remote);
    if (record) {
      const live = this.#d.sandboxes.live(record.sandboxId);
      if (live) return { sandboxId: record.sandboxId, apiKeyId: live.row.apiKeyId };
    }
    const key = apiKeyFromHeaders(req.headers);
    const info = key ? this.#d.apiKeys.verify(key) : undefined;
    return info ? { sandboxId: null, apiKeyId: info.id } : undefined;
  }
}

/** Listen on host:port (0: a free one); resolves the port. */
function listenOn(server: Server, host: string, port: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
}
