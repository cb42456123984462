// A read-only client of the OCI distribution API (what Docker Hub, GHCR, Quay, ECR, Harbor and `docker-registry`
// serve): manifests and blobs, with the token and basic auth schemes registries use, operator-configured mirrors
// tried first, and every byte checked against its digest.
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Code } from "@burrow/protocol";
import { TemplateBuildError } from "../../builder/template-build-error.js";
import { DOCKER_HUB, DOCKER_HUB_API_HOST, type ImageReference } from "./image-reference.js";
import { readBody, registryGet, type RegistryResponse } from "./registry-http.js";
import type { RegistryOptions } from "./registry-options.js";
import { parseAuthChallenge } from "./www-authenticate.js";

export interface RegistryCredentials {
  username: string;
  password: string;
}

export const MANIFEST_MEDIA_TYPES = [
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
  "application/vnd.docker.distribution.manifest.v2+json",
];

interface Endpoint {
  /** `https://host[:port]`, no trailing slash. */
  base: string;
  /** Credentials go only to the registry itself, never to a mirror. */
  mirror: boolean;
}

export interface RegistryClientOptions {
  options: RegistryOptions;
  credentials?: RegistryCredentials | undefined;
  signal?: AbortSignal | undefined;
}

function fail(message: string, cause?: unknown): TemplateBuildError {
  return new TemplateBuildError(Code.FailedPrecondition, message, { step: "base", cause });
}

export class RegistryClient {
  readonly #opts: RegistryClientOptions;
  /** Bearer tokens by endpoint and scope, for the client's lifetime (one pull). */
  readonly #tokens = new Map<string, string>();

  constructor(opts: RegistryClientOptions) {
    this.#opts = opts;
  }

  /** The manifest (or index) `reference` names: its bytes, media type and digest (verified when pinned). */
  async manifest(ref: ImageReference, reference: string): Promise<{ body: string; mediaType: string; digest: string }> {
    const res = await this.#get(ref, `manifests/${reference}`, { accept: MANIFEST_MEDIA_TYPES.join(", ") });
    const body = await readBody(res);
    const digest = `sha256:${createHash("sha256").update(body).digest("hex")}`;
    if (reference.startsWith("sha256:") && digest !== reference) {
      throw fail(`manifest ${reference} of ${ref.repository} arrived with digest ${digest}`);
    }
    const header = res.headers["content-type"];
    const declared = (JSON.parse(body) as { mediaType?: unknown }).mediaType;
    const mediaType = typeof declared === "string" ? declared : (header ?? "").split(";")[0]!.trim();
    return { body, mediaType, digest };
  }

  /** Download blob `digest` to `file`, checking its size and sha256 as it streams; nothing is left on failure. */
  async downloadBlob(ref: ImageReference, digest: string, file: string, expectedSize?: number): Promise<void> {
    const hex = /^sha256:([a-f0-9]{64})$/.exec(digest)?.[1];
    if (!hex) throw fail(`blob digest '${digest}' is not a sha256 digest`);
    const res = await this.#get(ref, `blobs/${digest}`, {});
    const hash = createHash("sha256");
    let size = 0;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (expectedSize !== undefined && size > expectedSize) return done(fail(`blob ${digest} is larger than its manifest says (${expectedSize} bytes)`));
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      await pipeline(res.body, meter, createWriteStream(file), { signal: this.#opts.signal });
      const got = hash.digest("hex");
      if (got !== hex) throw fail(`blob ${digest} arrived with digest sha256:${got}`);
      if (expectedSize !== undefined && size !== expectedSize) throw fail(`blob ${digest} is ${size} bytes, its manifest says ${expectedSize}`);
    } catch (error) {
      await rm(file, { force: true });
      throw error;
    }
  }

  #endpoints(registry: string): Endpoint[] {
    const { mirrors, insecure, allowPublic } = this.#opts.options;
    const own = registry === DOCKER_HUB ? DOCKER_HUB_API_HOST : registry;
    const listed = insecure.includes(registry);
    const endpoints: Endpoint[] = (mirrors[registry] ?? []).map((base) => ({ base, mirror: true }));
    if (listed || allowPublic) endpoints.push({ base: `${listed ? "http" : "https"}://${own}`, mirror: false });
    if (endpoints.length === 0) {
      throw new TemplateBuildError(
        Code.FailedPrecondition,
        `this server pulls only from the registries its operator configured (BURROW_REGISTRY_MIRRORS, BURROW_INSECURE_REGISTRIES); ${registry} is not one of them`,
        { step: "base" },
      );
    }
    return endpoints;
  }

  #trusted(host: string): boolean {
    const { insecure, mirrors } = this.#opts.options;
    if (insecure.includes(host)) return true;
    return Object.values(mirrors).some((list) => list.some((base) => new URL(base).host === host));
  }

  async #get(ref: ImageReference, path: string, opts: { accept?: string }): Promise<RegistryResponse> {
    const endpoints = this.#endpoints(ref.registry);
    let lastError: unknown;
    for (const [index, endpoint] of endpoints.entries()) {
      const last = index === endpoints.length - 1;
      try {
        const res = await this.#authorized(endpoint, ref.repository, `/v2/${ref.repository}/${path}`, opts.accept);
        if (res.status === 200) return res;
        const text = await readBody(res, 64 * 1024).catch(() => "");
        const detail = registryErrorText(text) ?? `HTTP ${res.status}`;
        lastError = res.status === 404 || res.status === 401 || res.status === 403
          ? new TemplateBuildError(res.status === 404 ? Code.NotFound : Code.FailedPrecondition,
            `${ref.registry}/${ref.repository}: ${path.startsWith("manifests/") ? `manifest ${path.slice(10)}` : path} ` +
            `${res.status === 404 ? "not found" : "not authorized (check the username and password)"} (${detail})`, { step: "base" })
          : fail(`registry ${new URL(endpoint.base).host} answered ${detail} for ${path}`);
      } catch (error) {
        if (this.#opts.signal?.aborted) throw error;
        lastError = error instanceof TemplateBuildError ? error : fail(`registry ${new URL(endpoint.base).host} unreachable: ${(error as Error).message}`, error);
      }
      if (last) break;
    }
    throw lastError;
  }

  async #authorized(endpoint: Endpoint, repository: string, path: string, accept: string | undefined): Promise<RegistryResponse> {
    const url = new URL(path, endpoint.base);
    const scope = `repository:${repository}:pull`;
    const tokenKey = `${endpoint.base} ${scope}`;
    const headers: Record<string, string> = accept ? { accept } : {};
    const cached = this.#tokens.get(tokenKey);
    const send = (authorization: string | undefined) =>
      registryGet(url, {
        headers: authorization ? { ...headers, authorization } : headers,
        trusted: (host) => this.#trusted(host),
        signal: this.#opts.signal,
      });
    const res = await send(cached);
    if (res.status !== 401) return res;
    const challenge = parseAuthChallenge(headerText(res.headers["www-authenticate"]));
    const credentials = endpoint.mirror ? undefined : this.#opts.credentials;
    let authorization: string | undefined;
    if (challenge?.scheme === "bearer" && challenge.params.realm) {
      res.body.resume();
      authorization = `Bearer ${await this.#token(endpoint, challenge.params, scope, credentials)}`;
    } else if (challenge?.scheme === "basic" && credentials) {
      res.body.resume();
      authorization = basicAuth(credentials);
    } else {
      return res; // nothing to answer the challenge with: the caller reports the 401
    }
    this.#tokens.set(tokenKey, authorization);
    return send(authorization);
  }

  async #token(endpoint: Endpoint, params: Record<string, string>, scope: string, credentials: RegistryCredentials | undefined): Promise<string> {
    let realm: URL;
    try {
      realm = new URL(params.realm as string);
    } catch (error) {
      throw fail(`registry ${new URL(endpoint.base).host} named an invalid token realm`, error);
    }
    if (params.service) realm.searchParams.set("service", params.service);
    realm.searchParams.set("scope", params.scope ?? scope);
    const registryHost = new URL(endpoint.base);
    const res = await registryGet(realm, {
      headers: credentials ? { authorization: basicAuth(credentials) } : {},
      // A token service beside a trusted registry (same host name, another port) is trusted with it.
      trusted: (host) => this.#trusted(host) || (this.#trusted(registryHost.host) && new URL(`http://${host}`).hostname === registryHost.hostname),
      signal: this.#opts.signal,
    });
    const text = await readBody(res, 1024 * 1024);
    if (res.status !== 200) {
      throw new TemplateBuildError(Code.FailedPrecondition, `token service ${realm.host} refused (HTTP ${res.status}${credentials ? "; check the username and password" : ""})`, { step: "base" });
    }
    const doc = JSON.parse(text) as { token?: unknown; access_token?: unknown };
    const token = typeof doc.token === "string" ? doc.token : typeof doc.access_token === "string" ? doc.access_token : undefined;
    if (!token) throw fail(`token service ${realm.host} answered without a token`);
    return token;
  }
}

function basicAuth(c: RegistryCredentials): string {
  return `Basic ${Buffer.from(`${c.username}:${c.password}`).toString("base64")}`;
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The registry's own error text (`{"errors":[{"code":"MANIFEST_UNKNOWN","message":"…"}]}`), when it sent one. */
function registryErrorText(body: string): string | undefined {
  try {
    const doc = JSON.parse(body) as { errors?: { code?: string; message?: string }[] };
    const first = doc.errors?.[0];
    return first ? `${first.code ?? "error"}: ${first.message ?? ""}`.trim() : undefined;
  } catch {
    return undefined;
  }
}
