// WebSocket upgrades and HTTP CONNECT through a host with header transforms, with the official SDK against a Burrow
// server of this file's own: the rules' headers (a secret's value) are set on the upgrade request and on the
// CONNECT request, the host's answer (101 / 200) reaches the sandbox, and the taken-over connection is relayed both
// ways (WebSocket frames echoed by the fake host, over HTTP and over TLS terminated with the egress CA; a request
// through the CONNECT tunnel answered). Every name ends in .test and every address is the fake internet's.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Sandbox } from "e2b";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DNS_ADDRESS, type FakeInternet, startFakeInternet } from "../helpers/fake-internet.js";
import { freePort, startServerProcess, type ServerProcess } from "../helpers/server-process.js";
import { keyedApi, sdkOptions } from "../helpers/keyed-api.js";
import { tearDownServers } from "../helpers/tear-down.js";
import { newTestInstance } from "../helpers/test-instance.js";

const A = "203.0.113.10";
const VALUE = `sk-burrow-${Math.random().toString(36).slice(2)}-ws`;
const SECRET = `ws_token_${Math.random().toString(36).slice(2, 8)}`;

// A WebSocket client on a raw socket (python3 of the base template; its ssl module reads the system store): the
// handshake, the status line and X-Upgrade-Headers of the answer, then one masked text frame and its echo.
const WS_CLIENT = `import base64, os, socket, ssl, sys
host, port, tls = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "tls"
s = socket.create_connection((host, port), timeout=10)
if tls: s = ssl.create_default_context().wrap_socket(s, server_hostname=host)
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(f"GET /ws HTTP/1.1\\r\\nHost: {host}\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Key: {key}\\r\\nSec-WebSocket-Version: 13\\r\\n\\r\\n".encode())
buf = b""
while b"\\r\\n\\r\\n" not in buf:
    chunk = s.recv(4096)
    if not chunk: break
    buf += chunk
head, _, rest = buf.partition(b"\\r\\n\\r\\n")
lines = head.decode().split("\\r\\n")
print(lines[0])
for l in lines[1:]:
    if l.lower().startswith("x-upgrade-headers:"): print(l.split(":", 1)[1].strip())
for msg in [b"ping-1", b"ping-2"]:
    mask = os.urandom(4)
    s.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(msg)))
    while len(rest) < 2 + len(msg):
        chunk = s.recv(4096)
        if not chunk: break
        rest += chunk
    print(rest[2:2 + len(msg)].decode())
    rest = rest[2 + len(msg):]
`;

const instance = newTestInstance("xupgr");
let internet: FakeInternet;
let server: ServerProcess;
let caDir: string;
const created: Sandbox[] = [];

const opts = () => sdkOptions(server.url, server.url, server.apiKey);

const api = (method: string, path: string, body?: unknown) => keyedApi(server.url, server.apiKey)(method, path, body);

async function sh(sandbox: Sandbox, command: string): Promise<string> {
  internet.assertRouted();
  const r = await sandbox.commands.run(`${command} 2>&1 || true`, { timeoutMs: 60_000 });
  return r.stdout.trim();
}

/** Values of `name` in a JSON array of raw header pairs. */
function values(json: string, name: string): string[] {
  const raw = JSON.parse(json) as string[];
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]!.toLowerCase() === name.toLowerCase()) out.push(raw[i + 1]!);
  return out;
}

describe("upgrades and CONNECT through hosts with header transforms (own server, fake internet)", () => {
  beforeAll(async () => {
    internet = await startFakeInternet([A], { names: { "api.test": A, "plain.test": A } });
    caDir = mkdtempSync(join(tmpdir(), "burrow-xupgr-ca-"));
    writeFileSync(join(caDir, "fake-ca.pem"), internet.caCert!);
    server = await startServerProcess(instance, await freePort(), ["--pool-size", "0"], {
      BURROW_DNS_UPSTREAM: DNS_ADDRESS,
      BURROW_EGRESS_UPSTREAM_CA: join(caDir, "fake-ca.pem"),
    });
    expect((await api("POST", "/secrets", { name: SECRET, value: VALUE })).status).toBe(201);
  });

  afterAll(async () => {
    await tearDownServers([{ instance, server }], {
      before: [() => Promise.all(created.map((s) => s.kill().catch(() => undefined)))],
      after: [() => caDir && rmSync(caDir, { recursive: true, force: true }), () => internet?.close()],
    });
  });

  it("a WebSocket handshake gets the rules' headers over HTTP and HTTPS, and frames go both ways", async () => {
    const rules = { "api.test": [{ transform: { headers: { "X-Key": `\${e2b.secrets.${SECRET}}` } } }] };
    const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000, network: { rules } as never });
    created.push(sandbox);
    await sandbox.files.write("/tmp/ws.py", WS_CLIENT);
    for (const [port, mode] of [[80, "plain"], [443, "tls"]] as const) {
      const out = (await sh(sandbox, `python3 /tmp/ws.py api.test ${port} ${mode}`)).split("\n");
      expect(out[0], `${mode}: ${out.join(" | ")}`).toBe("HTTP/1.1 101 Switching Protocols");
      expect(values(out[1]!, "x-key"), mode).toEqual([VALUE]);
      // The handshake's own headers reached the host as sent.
      expect(values(out[1]!, "upgrade"), mode).toEqual(["websocket"]);
      expect(out.slice(2), mode).toEqual(["ping-1", "ping-2"]);
    }
    // The value never came back to the sandbox beyond what the fake host echoed: nowhere in its environment.
    expect(await sh(sandbox, "env")).not.toContain(VALUE);
  });

  it("a CONNECT gets the rules' headers, the tunnel carries a request; a host without rules is spliced as before", async () => {
    const rules = { "api.test": [{ transform: { headers: { "Proxy-Authorization": `Basic \${e2b.secrets.${SECRET}}` } } }] };
    const sandbox = await Sandbox.create("base", { ...opts(), timeoutMs: 300_000, network: { rules } as never });
    created.push(sandbox);
    // curl through "the proxy at api.test:80": CONNECT api.test:8080, then GET /headers inside the tunnel.
    const out = await sh(sandbox, "curl -sv -m 10 -p -x http://api.test:80 http://api.test:8080/headers");
    const connectHeaders = /< X-Connect-Headers: (.*)/i.exec(out)?.[1];
    expect(connectHeaders, out).toBeDefined();
    expect(values(connectHeaders!.trim(), "proxy-authorization")).toEqual([`Basic ${VALUE}`]);
    expect(out).toMatch(/HTTP\/1\.1 200 Connection established/);
    const inner = out.split("\n").find((l) => l.startsWith("["));
    expect(values(inner!, "host")).toEqual(["api.test:8080"]);
    // No rules for plain.test: its CONNECT is spliced untouched (no header added).
    const plain = await sh(sandbox, "curl -sv -m 10 -p -x http://plain.test:80 http://plain.test:8080/headers");
    expect(values(/< X-Connect-Headers: (.*)/i.exec(plain)![1]!.trim(), "proxy-authorization")).toEqual([]);
  });
});
