// A real OCI registry (Debian's `docker-registry`, the CNCF distribution server) on the loopback for tests, with
// optional token auth served by a small token service of the test's own, plus a push client so tests can publish
// images they build themselves. Nothing here reaches beyond 127.0.0.1.
import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { createHash, createSign, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { freePort } from "./server-process.js";

export interface TestRegistry {
  /** `127.0.0.1:<port>` */
  host: string;
  /** Credentials accepted by the token service, when auth is on. */
  credentials?: { username: string; password: string };
  /** Requests the registry served, as `METHOD path` (from its access log). */
  requests(): string[];
  stop(): Promise<void>;
}

export async function startRegistry(opts: { auth?: boolean } = {}): Promise<TestRegistry> {
  const dir = mkdtempSync("/var/tmp/burrow-registry-");
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  let tokenServer: Server | undefined;
  let authYaml = "";
  let credentials: { username: string; password: string } | undefined;
  if (opts.auth) {
    credentials = { username: "tester", password: randomBytes(8).toString("hex") };
    const tokenPort = await freePort();
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=burrow-test-token",
      "-keyout", join(dir, "token.key"), "-out", join(dir, "token.crt"),
    ], { stdio: "ignore" });
    tokenServer = await startTokenService(tokenPort, dir, credentials);
    authYaml = [
      "auth:",
      "  token:",
      `    realm: http://127.0.0.1:${tokenPort}/token`,
      "    service: burrow-test-registry",
      "    issuer: burrow-test",
      `    rootcertbundle: ${join(dir, "token.crt")}`,
    ].join("\n");
  }
  writeFileSync(
    join(dir, "config.yml"),
    [
      "version: 0.1",
      "log:",
      "  level: error",
      "  accesslog:",
      "    disabled: false",
      "storage:",
      "  filesystem:",
      `    rootdirectory: ${join(dir, "data")}`,
      "  delete:",
      "    enabled: true",
      "http:",
      `  addr: ${host}`,
      authYaml,
      "",
    ].join("\n"),
  );
  const child: ChildProcess = spawn("/usr/bin/docker-registry", ["serve", join(dir, "config.yml")], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout?.on("data", (c: Buffer) => (log += c.toString()));
  child.stderr?.on("data", (c: Buffer) => (log += c.toString()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ok = await fetch(`http://${host}/v2/`).then((r) => r.status === 200 || r.status === 401, () => false);
    if (ok) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`docker-registry did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    host,
    ...(credentials ? { credentials } : {}),
    requests: () => [...log.matchAll(/"(GET|HEAD|PUT|POST|PATCH|DELETE) (\S+) HTTP/g)].map((m) => `${m[1]} ${m[2]}`),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await exited;
      }
      await new Promise((r) => (tokenServer ? tokenServer.close(r) : r(undefined)));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function base64url(data: Buffer | string): string {
  return Buffer.from(data).toString("base64url");
}

/** Docker's token protocol: Basic credentials in, an RS256 JWT whose x5c chains to the registry's root cert out. */
async function startTokenService(port: number, dir: string, credentials: { username: string; password: string }): Promise<Server> {
  const key = readFileSync(join(dir, "token.key"), "utf8");
  const certDer = Buffer.from(
    readFileSync(join(dir, "token.crt"), "utf8").replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, ""),
    "base64",
  );
  const expected = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString("base64")}`;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const authorized = req.headers.authorization === expected;
    const scopes = url.searchParams.getAll("scope");
    const access = authorized
      ? scopes.map((s) => {
          const [type, name, actions] = s.split(":");
          return { type, name, actions: (actions ?? "").split(",") };
        })
      : [];
    if (!authorized && req.headers.authorization) {
      res.writeHead(401, { "content-type": "application/json" }).end('{"details":"bad credentials"}');
      return;
    }
    const now = Math.floor(Date.now() / 1000);
    const header = base64url(JSON.stringify({ typ: "JWT", alg: "RS256", x5c: [certDer.toString("base64")] }));
    const claims = base64url(JSON.stringify({
      iss: "burrow-test", sub: authorized ? credentials.username : "", aud: "burrow-test-registry",
      exp: now + 300, nbf: now - 10, iat: now, jti: randomBytes(8).toString("hex"), access,
    }));
    const signature = createSign("RSA-SHA256").update(`${header}.${claims}`).sign(key);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: `${header}.${claims}.${base64url(signature)}` }));
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return server;
}

export interface PushBlob {
  mediaType: string;
  data: Buffer;
}

export function digestOf(data: Buffer | string): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

/** A client of the registry's push API, authenticating like `docker push` when the registry wants a token. */
export class RegistryPusher {
  #token: string | undefined;
  constructor(
    readonly registry: TestRegistry,
    readonly repository: string,
  ) {}

  async #fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const url = path.startsWith("http") ? path : `http://${this.registry.host}${path}`;
    const send = () => fetch(url, { ...init, headers: { ...(init.headers as Record<string, string>), ...(this.#token ? { authorization: `Bearer ${this.#token}` } : {}) } });
    let res = await send();
    if (res.status === 401 && this.registry.credentials) {
      const challenge = res.headers.get("www-authenticate") ?? "";
      const realm = /realm="([^"]+)"/.exec(challenge)?.[1];
      const service = /service="([^"]+)"/.exec(challenge)?.[1] ?? "";
      if (!realm) throw new Error(`no token realm in ${challenge}`);
      const { username, password } = this.registry.credentials;
      const tokenRes = await fetch(`${realm}?service=${service}&scope=repository:${this.repository}:pull,push`, {
        headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString("base64")}` },
      });
      this.#token = ((await tokenRes.json()) as { token: string }).token;
      res = await send();
    }
    return res;
  }

  async pushBlob(data: Buffer): Promise<string> {
    const digest = digestOf(data);
    const start = await this.#fetch(`/v2/${this.repository}/blobs/uploads/`, { method: "POST" });
    if (start.status !== 202) throw new Error(`blob upload start: ${start.status} ${await start.text()}`);
    const location = new URL(start.headers.get("location") ?? "", `http://${this.registry.host}`);
    location.searchParams.set("digest", digest);
    const put = await this.#fetch(location.toString(), {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: data,
    });
    if (put.status !== 201) throw new Error(`blob upload: ${put.status} ${await put.text()}`);
    return digest;
  }

  async pushManifest(reference: string, mediaType: string, manifest: unknown): Promise<string> {
    const body = JSON.stringify(manifest);
    const res = await this.#fetch(`/v2/${this.repository}/manifests/${reference}`, {
      method: "PUT",
      headers: { "content-type": mediaType },
      body,
    });
    if (res.status !== 201) throw new Error(`manifest push: ${res.status} ${await res.text()}`);
    return digestOf(body);
  }

  /** Push config + layers and an OCI manifest; returns the manifest's digest and size. */
  async pushImage(tag: string, layers: PushBlob[], config: unknown): Promise<{ digest: string; size: number }> {
    const configData = Buffer.from(JSON.stringify(config));
    const configDigest = await this.pushBlob(configData);
    const layerDescriptors = [];
    for (const layer of layers) {
      layerDescriptors.push({ mediaType: layer.mediaType, digest: await this.pushBlob(layer.data), size: layer.data.length });
    }
    const manifest = {
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: "application/vnd.oci.image.config.v1+json", digest: configDigest, size: configData.length },
      layers: layerDescriptors,
    };
    const digest = await this.pushManifest(tag, manifest.mediaType, manifest);
    return { digest, size: Buffer.byteLength(JSON.stringify(manifest)) };
  }

  /** Push an OCI index under `tag` pointing at already pushed manifests. */
  async pushIndex(tag: string, entries: { digest: string; size: number; os: string; architecture: string }[]): Promise<string> {
    const index = {
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: entries.map((e) => ({
        mediaType: "application/vnd.oci.image.manifest.v1+json",
        digest: e.digest,
        size: e.size,
        platform: { os: e.os, architecture: e.architecture },
      })),
    };
    return this.pushManifest(tag, index.mediaType, index);
  }
}
