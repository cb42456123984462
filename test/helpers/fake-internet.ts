// A fake internet for egress tests: a network namespace of its own holding "public" hosts at TEST-NET-3 addresses
// (203.0.113.0/24, RFC 5737), joined to the host by a veth (192.0.2.0/30, TEST-NET-1) and routed so that sandboxes
// reach it through Burrow's normal egress path (the forward chain and masquerading, like any internet destination).
// Every host answers HTTP on port 80 with "hello from <its address>". Nothing leaves the machine: start() checks with
// `ip route get` that every fake address is routed into the namespace before it returns, and refuses to start when
// the prefix is routed anywhere already. close() removes what it created, by name.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";

export const FAKE_PREFIX = "203.0.113.0/24";
const LINK_HOST = "192.0.2.1";
const LINK_NS = "192.0.2.2";
const LINK_PREFIX = "192.0.2.0/30";

export interface FakeInternet {
  /** The fake hosts' addresses (each answers HTTP on port 80). */
  readonly hosts: readonly string[];
  readonly netns: string;
  /** Fails unless every fake host is still routed into the namespace (call before traffic, if in doubt). */
  assertRouted(): void;
  close(): Promise<void>;
}

const SERVER = `const http=require("http");
http.createServer((q,r)=>{r.end("hello from "+q.socket.localAddress)}).listen(80,"0.0.0.0",()=>console.log("listening"));`;

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

function tryRun(cmd: string, args: string[]): void {
  try {
    run(cmd, args);
  } catch {
    // Clean-up of something that may already be gone.
  }
}

export async function startFakeInternet(hosts: readonly string[]): Promise<FakeInternet> {
  for (const h of hosts) if (!h.startsWith("203.0.113.")) throw new Error(`fake host ${h} is outside ${FAKE_PREFIX}`);
  for (const prefix of [FAKE_PREFIX, LINK_PREFIX]) {
    const taken = run("ip", ["-4", "route", "show", "root", prefix]).trim();
    if (taken) throw new Error(`${prefix} is already routed (${taken}); another fake internet is running?`);
  }
  const rand = randomBytes(3).toString("hex");
  const netns = `bfi-${rand}`;
  const hostVeth = `bfih${rand}`;
  const nsVeth = `bfin${rand}`;
  let server: ChildProcess | undefined;
  const close = async () => {
    if (server?.pid !== undefined && server.exitCode === null) {
      server.kill("SIGKILL");
      await new Promise((resolve) => server!.once("exit", resolve));
    }
    tryRun("ip", ["route", "del", FAKE_PREFIX, "via", LINK_NS, "dev", hostVeth]);
    tryRun("ip", ["link", "del", hostVeth]);
    tryRun("ip", ["netns", "del", netns]);
  };
  const assertRouted = () => {
    for (const h of hosts) {
      const [route] = JSON.parse(run("ip", ["-j", "route", "get", h])) as { dev?: string }[];
      if (route?.dev !== hostVeth) throw new Error(`${h} is routed via ${route?.dev ?? "nothing"}, not into ${netns}`);
    }
  };
  try {
    run("ip", ["netns", "add", netns]);
    run("ip", ["link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth, "netns", netns]);
    run("ip", ["addr", "add", `${LINK_HOST}/30`, "dev", hostVeth]);
    run("ip", ["link", "set", hostVeth, "up"]);
    const inNs = (args: string[]) => run("ip", ["-n", netns, ...args]);
    inNs(["link", "set", "lo", "up"]);
    inNs(["addr", "add", `${LINK_NS}/30`, "dev", nsVeth]);
    for (const h of hosts) inNs(["addr", "add", `${h}/32`, "dev", nsVeth]);
    inNs(["link", "set", nsVeth, "up"]);
    run("ip", ["route", "add", FAKE_PREFIX, "via", LINK_NS, "dev", hostVeth]);
    assertRouted();
    server = spawn("ip", ["netns", "exec", netns, process.execPath, "-e", SERVER], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      server!.stdout!.on("data", (d: Buffer) => d.toString().includes("listening") && resolve());
      server!.once("exit", (code) => reject(new Error(`fake internet server exited ${code}`)));
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { hosts, netns, assertRouted, close };
}
