// A bounded fuzz of the gateway: a process in a real sandbox answers a few hundred requests with random status
// lines, reason phrases, header names and values (CR, LF, NUL and high bytes included), bodies and truncations.
// Every answer the client gets must be either the sandbox's response, proxied, or the gateway's 502 JSON, as
// judged by Node's strict HTTP parser; the server process must stay up and keep serving. The seed is printed
// with every failure; BURROW_FUZZ_SEED replays one.
import { rmSync } from "node:fs";
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Sandbox } from "e2b";
import { rawPath, startResponder, viaGateway, waitForPort, type GatewayAnswer } from "../helpers/raw-http-responder.js";
import { burrowDown, freePort, startServerProcess, stopServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { newTestInstance } from "../helpers/test-instance.js";

const FUZZ_PORT = 8000;
/** Every UPGRADE_EVERY-th request asks for a WebSocket upgrade, which takes the gateway's other proxy path. */
const UPGRADE_EVERY = 4;
/** BURROW_FUZZ_CASES runs a longer fuzz locally. */
const CASES = Number(process.env["BURROW_FUZZ_CASES"] ?? 400);
const CONCURRENCY = 8;
const SEED = Number(process.env["BURROW_FUZZ_SEED"] ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: small, seedable, good enough to pick bytes. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

class Generator {
  readonly #rand: () => number;
  constructor(seed: number) {
    this.#rand = prng(seed);
  }

  int(min: number, max: number): number {
    return min + Math.floor(this.#rand() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.#rand() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)]!;
  }

  /** Bytes (as a latin1 string) mostly printable, sometimes control characters, CR, LF, NUL or high bytes. */
  bytes(maxLength: number, nastiness: number): string {
    let out = "";
    const length = this.int(0, maxLength);
    for (let i = 0; i < length; i++) {
      out += this.chance(nastiness)
        ? String.fromCharCode(this.pick([0, 1, 7, 9, 10, 13, 27, 127, 0x80, 0x9f, 0xa0, 0xe9, 0xff, this.int(0, 255)]))
        : String.fromCharCode(this.int(0x20, 0x7e));
    }
    return out;
  }

  statusCode(): string {
    const kind = this.int(0, 9);
    if (kind <= 4) return String(this.int(200, 599));
    if (kind === 5) return String(this.int(0, 199)).padStart(3, "0");
    if (kind === 6) return String(this.int(600, 999));
    if (kind === 7) return this.pick(["101", "100", "103", "204", "304"]);
    return this.pick(["", "1", "20", "1000", "-1", "2OO", " 200", "200.0", "0x1f4"]);
  }

  headerName(): string {
    if (this.chance(0.8)) {
      return this.pick(["content-type", "x-custom", "Set-Cookie", "cache-control", "X-Weird_Name!#$%&'*+-.^`|~", "etag", "vary"]);
    }
    return this.bytes(12, 0.4) || "x";
  }

  headerValue(): string {
    return this.chance(0.7) ? this.bytes(30, 0.02) : this.bytes(30, 0.4);
  }

  /**
   * One response, as latin1. Half are plausible (valid status, header names and framing; reason phrases and values
   * may still hold odd bytes), half are hostile (any status, any bytes anywhere, broken framing, truncation).
   */
  response(upgrade = false): string {
    const hostile = this.chance(0.5);
    const switching = upgrade && this.chance(0.5);
    const eol = !hostile || this.chance(0.8) ? "\r\n" : this.pick(["\n", "\r", "\n\r"]);
    const version = !hostile || this.chance(0.7) ? "HTTP/1.1" : this.pick(["HTTP/1.0", "HTTP/2.0", "HTTP/1.1 ", "HTTX/1.1", "http/1.1", ""]);
    let head = "";
    // Interim 1xx answers before the final one.
    if (this.chance(0.1)) head += `HTTP/1.1 ${this.pick(["100", "102", "103"])} ${this.bytes(10, hostile ? 0.2 : 0)}${eol}${eol}`;
    const status = switching ? "101" : hostile ? this.statusCode() : String(this.int(200, 599));
    head += `${version} ${status}${this.chance(0.9) ? ` ${this.bytes(20, hostile ? 0.3 : 0.05)}` : ""}${eol}`;
    if (switching) head += `Upgrade: websocket${eol}Connection: Upgrade${eol}`;
    for (let i = this.int(0, 6); i > 0; i--) {
      const name = hostile ? this.headerName() : this.pick(["content-type", "x-custom", "Set-Cookie", "etag", "X-Weird_Name!#$%&'*+-.^`|~"]);
      const value = hostile ? this.headerValue() : this.bytes(30, 0).trim();
      head += `${name}${hostile ? this.pick([": ", ":", " : ", ":\t"]) : ": "}${value}${eol}`;
    }
    const body = this.bytes(40, hostile ? 0.3 : 0.05);
    const framing = this.int(0, hostile ? 4 : 2);
    if (framing === 0) head += `content-length: ${body.length}${eol}`;
    else if (framing === 1) head += `transfer-encoding: chunked${eol}`;
    else if (framing === 2) head += `connection: close${eol}`;
    else if (framing === 3) head += `content-length: ${this.pick([String(body.length + this.int(1, 50)), "abc", "-1", `${body.length}, ${body.length + 1}`])}${eol}`;
    let bytes = `${head}${eol}`;
    if (framing === 1) bytes += !hostile || this.chance(0.5) ? `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n` : `${this.bytes(6, 0.5)}\r\n${body}`;
    else bytes += body;
    // Truncated anywhere: the sandbox closes mid-head or mid-body.
    if (hostile && this.chance(0.3)) bytes = bytes.slice(0, this.int(0, bytes.length));
    return bytes;
  }
}

/** RFC 9112 reason-phrase characters: what the gateway may let through. */
const PRINTABLE_REASON = /^[\t\x20-\x7e\x80-\xff]*$/;

function statusOf(response: string): number | undefined {
  // Skip one interim answer (100, 102 or 103: what the generator puts first).
  const match = /^HTTP\/\d\.\d (\d{3})[ \r\n]/.exec(response.replace(/^HTTP\/1\.1 10[023] [^\n]*\n(\r?\n)?/, ""));
  return match ? Number(match[1]) : undefined;
}

/** An upgrade request through the gateway; resolves with the switch or the answer that declined it. */
function upgradeViaGateway(serverUrl: string, sandboxId: string, path: string): Promise<GatewayAnswer & { upgraded?: boolean }> {
  const base = new URL(serverUrl);
  return new Promise((resolve, reject) => {
    const req = request({
      host: base.hostname,
      port: base.port,
      path,
      agent: false,
      headers: { host: `${FUZZ_PORT}-${sandboxId}.localhost`, connection: "Upgrade", upgrade: "websocket" },
    });
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode!, statusMessage: res.statusMessage!, rawHeaders: res.rawHeaders, body: "", upgraded: true });
    });
    req.on("response", (res) => {
      let body = "";
      const answer = (): GatewayAnswer => ({ status: res.statusCode!, statusMessage: res.statusMessage!, rawHeaders: res.rawHeaders, body });
      res.setEncoding("latin1");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve(answer()));
      res.on("error", (err) => resolve({ ...answer(), bodyError: err.message }));
    });
    req.setTimeout(30_000, () => req.destroy(new Error("no answer from the gateway within 30 s")));
    req.on("error", reject);
    req.end();
  });
}

describe("gateway fuzz: random responses from a sandbox", () => {
  const instance = newTestInstance("gwfuzz");
  let server: ServerProcess;
  let sandbox: Sandbox;

  beforeAll(async () => {
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"]);
    sandbox = await Sandbox.create("base", { apiKey: server.apiKey, apiUrl: server.url, sandboxUrl: server.url, debug: false, timeoutMs: 600_000 });
    await startResponder(sandbox, FUZZ_PORT);
    await waitForPort(server.url, sandbox.sandboxId, FUZZ_PORT);
  });

  afterAll(async () => {
    await sandbox?.kill().catch(() => undefined);
    if (server) await stopServerProcess(server, "SIGTERM");
    burrowDown(instance);
    rmSync(instance.stateDir, { recursive: true, force: true });
  });

  it(`answers ${CASES} random responses with the response or a 502, and stays up (seed ${SEED})`, async () => {
    const gen = new Generator(SEED);
    const responses = Array.from({ length: CASES }, (_, i) => gen.response(i % UPGRADE_EVERY === 0));
    const outcomes = { proxied: 0, gateway502: 0, upgraded: 0 };
    const failures: string[] = [];

    const check = (index: number, sent: string, answer: (GatewayAnswer & { upgraded?: boolean }) | Error) => {
      const where = `seed ${SEED}, case ${index}, sent ${JSON.stringify(sent)}`;
      if (answer instanceof Error) {
        failures.push(`${where}: no valid HTTP answer from the gateway (${answer.message})`);
        return;
      }
      if (answer.upgraded) {
        if (answer.status === 101 && statusOf(sent) === 101 && PRINTABLE_REASON.test(answer.statusMessage)) outcomes.upgraded++;
        else failures.push(`${where}: unexpected upgrade ${answer.status} ${JSON.stringify(answer.statusMessage)}`);
        return;
      }
      if (answer.status === 502 && answer.rawHeaders.includes("application/json")) {
        const body = JSON.parse(answer.body) as { code?: number; message?: string };
        if (body.code === 502 && typeof body.message === "string") {
          outcomes.gateway502++;
          return;
        }
      }
      // Anything else must be the sandbox's own answer: its status, a printable reason.
      if (answer.status !== statusOf(sent) || answer.status < 200 || answer.status > 599 || !PRINTABLE_REASON.test(answer.statusMessage)) {
        failures.push(`${where}: unexpected answer ${answer.status} ${JSON.stringify(answer.statusMessage)} ${JSON.stringify(answer.body)}`);
        return;
      }
      outcomes.proxied++;
    };

    let next = 0;
    const worker = async () => {
      while (next < responses.length) {
        const index = next++;
        const sent = responses[index]!;
        const path = rawPath(sent);
        const answer = await (index % UPGRADE_EVERY === 0 ? upgradeViaGateway(server.url, sandbox.sandboxId, path) : viaGateway(server.url, sandbox.sandboxId, FUZZ_PORT, path)).catch(
          (err: Error) => err,
        );
        check(index, sent, answer);
        if (index % 50 === 49) {
          expect(server.child.exitCode, `seed ${SEED}: server exited\n${server.output().slice(-4000)}`).toBeNull();
          expect((await fetch(`${server.url}/health`)).status, `seed ${SEED}`).toBe(200);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    expect(failures.slice(0, 10), `seed ${SEED}`).toEqual([]);
    expect(server.child.exitCode, `seed ${SEED}`).toBeNull();
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
    // The generator must exercise both outcomes, or the test proves nothing.
    expect(outcomes.proxied, `seed ${SEED}`).toBeGreaterThan(CASES / 10);
    expect(outcomes.gateway502, `seed ${SEED}`).toBeGreaterThan(CASES / 10);
    expect(outcomes.upgraded, `seed ${SEED}`).toBeGreaterThan(0);
    // And the sandbox's envd is still served normally through the same gateway.
    expect((await sandbox.commands.run("echo still here")).stdout).toBe("still here\n");
  }, 600_000);
});
