// A process inside a real sandbox that answers HTTP requests with exactly the bytes the client asks for: the
// stand-in for a hostile or broken sandbox program. It runs on python3 (in the base template) and closes each
// connection after its answer.
//   GET /raw/<base64url bytes>   answer those bytes
//   anything else                the default answer (--default <base64url>), else a plain 200 "ok"
// With --replace-envd it first kills whichever process listens on the port (envd on 49983) and takes the port
// over before the sandbox init restarts envd.
import { request } from "node:http";
import type { Sandbox } from "e2b";

export const RESPONDER_PATH = "/tmp/raw-http-responder.py";

const SCRIPT = String.raw`
import base64, os, signal, socket, sys, threading, time

port = int(sys.argv[1])
default = None
replace = False
args = sys.argv[2:]
while args:
    a = args.pop(0)
    if a == "--default":
        b = args.pop(0)
        default = base64.urlsafe_b64decode(b + "=" * (-len(b) % 4))
    elif a == "--replace-envd":
        replace = True

def listener_pids(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                for line in f.readlines()[1:]:
                    parts = line.split()
                    if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(parts[9])
        except OSError:
            pass
    pids = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir("/proc/%s/fd" % pid):
                link = os.readlink("/proc/%s/fd/%s" % (pid, fd))
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    pids.add(int(pid))
        except OSError:
            pass
    return pids

def answer_for(path):
    if path.startswith("/raw/"):
        b = path[5:].split("?")[0]
        return base64.urlsafe_b64decode(b + "=" * (-len(b) % 4))
    if default is not None:
        return default
    return b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"

def handle(c):
    try:
        c.settimeout(30)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = c.recv(65536)
            if not chunk:
                return
            data += chunk
        line = data.split(b"\r\n", 1)[0].decode("latin1").split(" ")
        c.sendall(answer_for(line[1] if len(line) > 1 else "/"))
        c.shutdown(socket.SHUT_WR)
        c.settimeout(2)
        while c.recv(65536):
            pass
    except Exception:
        pass
    finally:
        c.close()

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
if replace:
    time.sleep(1)
    for pid in listener_pids(port):
        os.kill(pid, signal.SIGKILL)
deadline = time.time() + 20
while True:
    try:
        s.bind(("0.0.0.0", port))
        break
    except OSError:
        if time.time() > deadline:
            print("could not bind", port, flush=True)
            sys.exit(1)
        time.sleep(0.005)
s.listen(256)
print("listening", port, flush=True)
while True:
    conn, _ = s.accept()
    threading.Thread(target=handle, args=(conn,), daemon=True).start()
`;

/** The path that makes the responder answer `bytes` (latin1 when a string). */
export function rawPath(bytes: string | Buffer): string {
  return `/raw/${(typeof bytes === "string" ? Buffer.from(bytes, "latin1") : bytes).toString("base64url")}`;
}

export function base64url(bytes: string): string {
  return Buffer.from(bytes, "latin1").toString("base64url");
}

/** Write the responder into the sandbox and start it on `port` in the background (as root: it may kill envd). */
export async function startResponder(sandbox: Sandbox, port: number, extraArgs: string[] = []): Promise<void> {
  await sandbox.files.write(RESPONDER_PATH, SCRIPT, { user: "root" });
  // setsid + nohup: the responder must not depend on the envd it may replace.
  await sandbox.commands.run(
    `setsid nohup python3 ${RESPONDER_PATH} ${port} ${extraArgs.join(" ")} > /tmp/responder-${port}.log 2>&1 < /dev/null &`,
    { user: "root" },
  );
}

export interface GatewayAnswer {
  status: number;
  statusMessage: string;
  rawHeaders: string[];
  body: string;
  /** Set when the body broke off after the head (the gateway dropped the connection). */
  bodyError?: string;
}

/** A request to a sandbox port through the gateway (Host routing), on a fresh connection; rejects when no head came. */
export function viaGateway(serverUrl: string, sandboxId: string, port: number, path: string): Promise<GatewayAnswer> {
  const base = new URL(serverUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: base.hostname, port: base.port, path, agent: false, headers: { host: `${port}-${sandboxId}.localhost` } },
      (res) => {
        let body = "";
        const answer = (): GatewayAnswer => ({ status: res.statusCode!, statusMessage: res.statusMessage!, rawHeaders: res.rawHeaders, body });
        res.setEncoding("latin1");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve(answer()));
        res.on("error", (err) => resolve({ ...answer(), bodyError: err.message }));
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error("no answer from the gateway within 30 s")));
    req.on("error", reject);
    req.end();
  });
}

/** Poll until `port` in the sandbox answers through the gateway with something other than "port is not open". */
export async function waitForPort(serverUrl: string, sandboxId: string, port: number, path = "/"): Promise<GatewayAnswer> {
  let last: GatewayAnswer | undefined;
  for (let i = 0; i < 150; i++) {
    last = await viaGateway(serverUrl, sandboxId, port, path).catch(() => undefined);
    if (last && !(last.status === 502 && last.body.includes("port is not open"))) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`port ${port} of ${sandboxId} never answered: ${JSON.stringify(last)}`);
}
