// Real-kernel tests of the sandbox network. Everything happens on loopback, on a bridge this test creates,
// and in network namespaces it creates: "sandboxes" are `unshare --net sleep` processes, and "the internet"
// is a namespace `burrowtest-ext-<rand>` behind a veth with 198.51.100.1/24 (host) ↔ 198.51.100.2/24 (ext).
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type BurrowNetworkManager, createNetworkManager, NetworkError } from "../src/network/index.js";
import { POLL } from "./helpers/poll.js";

const rand = randomBytes(3).toString("hex");
const instance = `t${rand}`; // 7 chars: the instance pattern is [a-z0-9]{1,8}
const octet = 1 + (randomBytes(1)[0] ?? 0) % 250;
// 10.199/16: outside the 10.200-249/16 range from which concurrent e2e servers take their subnets.
const subnet = `10.199.${octet}.0/24`;
const extNs = `burrowtest-ext-${rand}`;
const extVeth = `btx${rand}`;
const EXT_HOST = "198.51.100.1";
const EXT_SERVER = "198.51.100.2";
// A link-local address routed to the fake internet, to prove 169.254.0.0/16 stays blocked. Not .169.254,
// which a real metadata service might use on the host.
const LINK_LOCAL = "169.254.231.7";
const BLOCKED_TIMEOUT_MS = 1500;

const CLIENT = `const net=require("net");const [h,p,t,la]=process.argv.slice(1);
const s=net.connect({host:h,port:+p,localAddress:la||undefined});
setTimeout(()=>{console.log("timeout");process.exit(0)},+t);
let d="";s.on("data",c=>d+=c);s.on("end",()=>{console.log("ok "+d);process.exit(0)});
s.on("error",e=>{console.log("error "+e.code);process.exit(0)});`;
const SERVER = `const net=require("net");const [h,p]=process.argv.slice(1);
net.createServer(s=>{s.on("error",()=>{});s.end(s.remoteAddress)}).listen(+p,h,()=>console.log("listening"));`;

const ip_forward = "/proc/sys/net/ipv4/ip_forward";
const children: ChildProcess[] = [];
const sh = (cmd: string, args: string[], input?: string) =>
  execFileSync(cmd, args, { encoding: "utf8", input, stdio: ["pipe", "pipe", "pipe"] });
const tryRun = (cmd: string, args: string[]) => {
  try {
    sh(cmd, args);
  } catch {
    // Clean-up of something that may not exist.
  }
};
const links = () => (JSON.parse(sh("ip", ["-j", "link", "show"])) as { ifname: string }[]).map((l) => l.ifname).sort();
const tables = () => sh("nft", ["list", "tables"]).split("\n").filter(Boolean).sort();
const netnsList = () => sh("ip", ["netns", "list"]).split("\n").filter(Boolean).sort();

/** A "sandbox": a process in a fresh network namespace. */
async function spawnSandbox(): Promise<number> {
  const child = spawn("unshare", ["--net", "sleep", "600"], { stdio: "ignore" });
  children.push(child);
  const pid = child.pid;
  if (pid === undefined) throw new Error("unshare did not start");
  const own = readlinkSync("/proc/self/ns/net");
  // readlink fails until the process exists; it names our namespace until unshare has made its own.
  await vi.waitFor(() => {
    if (readlinkSync(`/proc/${pid}/ns/net`) === own) throw new Error(`pid ${pid} has not entered a new network namespace`);
  }, { ...POLL, interval: 5 });
  return pid;
}

/** A TCP server that answers every connection with the peer's address, inside the netns at `nsPath`. */
async function startServer(nsPath: string, host: string, port: number): Promise<void> {
  const child = spawn("nsenter", [`--net=${nsPath}`, process.execPath, "-e", SERVER, host, String(port)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => d.toString().includes("listening") && resolve());
    child.on("exit", (code) => reject(new Error(`server in ${nsPath} exited ${code}`)));
  });
}

/** Connect from inside a netns; "ok <what the server saw>", "timeout" or "error <code>". */
function connectFrom(nsPath: string, host: string, port: number, localAddress = ""): Promise<string> {
  return new Promise((resolve, reject) => {
    const args = [`--net=${nsPath}`, process.execPath, "-e", CLIENT, host, String(port), String(BLOCKED_TIMEOUT_MS)];
    const child = spawn("nsenter", localAddress ? [...args, localAddress] : args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", () => resolve(out.trim()));
  });
}

const nsOf = (pid: number) => `/proc/${pid}/ns/net`;
const extPath = `/run/netns/${extNs}`;

/** Sum of the packet counters of one chain, to prove that a drop happened in our rules. */
function chainDrops(family: string, chain: string): number {
  const doc = JSON.parse(sh("nft", ["-j", "list", "chain", family, `burrow_${instance}`, chain])) as {
    nftables: { rule?: { expr: { counter?: { packets: number } }[] } }[];
  };
  let n = 0;
  for (const item of doc.nftables) for (const e of item.rule?.expr ?? []) n += e.counter?.packets ?? 0;
  return n;
}

function setMembers(family: string, set: string): string {
  return sh("nft", ["list", "set", family, `burrow_${instance}`, set]);
}

/** The host address of the interface carrying the default route (e.g. eth0's), if any. */
function primaryAddress(): string | undefined {
  const routes = JSON.parse(sh("ip", ["-j", "-4", "route", "show", "default"])) as { dev?: string }[];
  const dev = routes[0]?.dev;
  if (dev === undefined) return undefined;
  const addrs = JSON.parse(sh("ip", ["-j", "-4", "addr", "show", "dev", dev])) as {
    addr_info: { local: string }[];
  }[];
  return addrs[0]?.addr_info[0]?.local;
}

describe("network manager (real kernel)", () => {
  const before = { links: [] as string[], tables: [] as string[], netns: [] as string[], ipForward: "" };
  const stateDir = mkdtempSync(join(tmpdir(), "burrow-net-"));
  let nm: BurrowNetworkManager;
  let hostServer: Server;
  let hostPort = 0;

  beforeAll(async () => {
    before.links = links();
    before.tables = tables();
    before.netns = netnsList();
    before.ipForward = readFileSync(ip_forward, "utf8").trim();
    sh("ip", ["netns", "add", extNs]);
    sh("ip", ["-batch", "-"], [
      `link add name ${extVeth} type veth peer name ext0 netns ${extNs}`,
      `addr add ${EXT_HOST}/24 dev ${extVeth}`,
      `link set ${extVeth} up`,
      `route add ${LINK_LOCAL}/32 via ${EXT_SERVER} dev ${extVeth}`,
    ].join("\n") + "\n");
    sh("ip", ["-n", extNs, "-batch", "-"], [
      "link set lo up",
      `addr add ${EXT_SERVER}/24 dev ext0`,
      `addr add ${LINK_LOCAL}/32 dev ext0`,
      "link set ext0 up",
    ].join("\n") + "\n");
    await startServer(extPath, "0.0.0.0", 8080);
    hostServer = createServer((s) => {
      s.on("error", () => {});
      s.end(String(s.remoteAddress));
    });
    await new Promise<void>((r) => hostServer.listen(0, "0.0.0.0", r));
    hostPort = (hostServer.address() as { port: number }).port;
    nm = createNetworkManager({ instance, subnet });
  });

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null && c.pid) {
      try {
        process.kill(c.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : new Promise((r) => c.once("exit", r)))));
    await new Promise((r) => hostServer?.close(r));
    await nm?.teardown().catch(() => {});
    tryRun("nft", ["delete", "table", "inet", `burrow_${instance}`]);
    tryRun("nft", ["delete", "table", "bridge", `burrow_${instance}`]);
    tryRun("ip", ["link", "del", `burrow-${instance}`]);
    tryRun("ip", ["link", "del", extVeth]);
    tryRun("ip", ["netns", "del", extNs]);
    if (before.ipForward !== "") writeFileSync(ip_forward, `${before.ipForward}\n`);
    rmSync(stateDir, { recursive: true, force: true });
  });

  it("refuses a subnet that overlaps a host address, naming the conflict, and creates nothing", async () => {
    const clash = createNetworkManager({ instance: `u${rand}`, subnet: "198.51.100.128/25" });
    const err = await clash.setup().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).code).toBe("subnet_conflict");
    expect((err as NetworkError).message).toContain(extVeth);
    expect(existsSync(`/sys/class/net/burrow-u${rand}`)).toBe(false);
    expect(tables()).not.toContain(`table inet burrow_u${rand}`);
  });

  it("sets up bridge, tables and forwarding, remembering the old ip_forward", async () => {
    await nm.setup();
    await nm.setup(); // idempotent
    expect(existsSync(`/sys/class/net/${nm.bridge}`)).toBe(true);
    expect(tables()).toEqual(expect.arrayContaining([`table inet burrow_${instance}`, `table bridge burrow_${instance}`]));
    expect(readFileSync(ip_forward, "utf8").trim()).toBe("1");
    const registry = JSON.parse(readFileSync("/run/burrow/ip-forward.json", "utf8")) as { original: string; holders: string[] };
    expect(registry.holders).toContain(instance);
    expect(["0", "1"]).toContain(registry.original);
  });

  it("lets the host reach a sandbox, and nothing else reach the host or another sandbox", async () => {
    const a = await spawnSandbox();
    const b = await spawnSandbox();
    const na = await nm.attach("sba", a, { allowInternetAccess: false });
    const nb = await nm.attach("sbb", b, { allowInternetAccess: true });
    expect(na.hostVeth).toMatch(new RegExp(`^b${instance}-[0-9a-f]+$`));
    expect(na.hostVeth.length).toBeLessThanOrEqual(15);
    await startServer(nsOf(b), "0.0.0.0", 7000);

    // host → sandbox works; the sandbox sees the bridge address
    expect(await connectFrom("/proc/self/ns/net", nb.ip, 7000)).toBe(`ok ${nm.gateway}`);

    // sandbox → a host service on 0.0.0.0: blocked via the bridge IP, the primary address and another host address
    const drops = chainDrops("inet", "input");
    expect(await connectFrom(nsOf(a), nm.gateway, hostPort)).toBe("timeout");
    expect(await connectFrom(nsOf(b), nm.gateway, hostPort)).toBe("timeout");
    const primary = primaryAddress();
    if (primary !== undefined) {
      expect(await connectFrom("/proc/self/ns/net", primary, hostPort)).toBe(`ok ${primary}`); // control
      expect(await connectFrom(nsOf(a), primary, hostPort)).toBe("timeout");
    }
    expect(await connectFrom(nsOf(b), EXT_HOST, hostPort)).toBe("timeout");
    expect(chainDrops("inet", "input")).toBeGreaterThan(drops);

    // sandbox → sandbox: blocked, directly on the bridge and routed through the gateway
    expect(await connectFrom(nsOf(a), nb.ip, 7000)).toMatch(/^(timeout|error EHOSTUNREACH)$/);
    sh("nsenter", [`--net=${nsOf(a)}`, "ip", "route", "add", `${nb.ip}/32`, "via", nm.gateway]);
    expect(await connectFrom(nsOf(a), nb.ip, 7000)).toMatch(/^(timeout|error EHOSTUNREACH)$/);

    await na.release();
    await nb.release();
  });

  it("gives internet access (masqueraded) only to allowed sandboxes, and toggles it", async () => {
    const a = await spawnSandbox();
    const c = await spawnSandbox();
    const na = await nm.attach("inet-a", a, { allowInternetAccess: true });
    const nc = await nm.attach("inet-c", c, { allowInternetAccess: false });

    expect(await connectFrom(nsOf(a), EXT_SERVER, 8080)).toBe(`ok ${EXT_HOST}`);
    expect(await connectFrom(nsOf(c), EXT_SERVER, 8080)).toBe("timeout");
    // link-local stays closed even with internet access (control: the host itself reaches it)
    expect(await connectFrom("/proc/self/ns/net", LINK_LOCAL, 8080)).toBe(`ok ${EXT_HOST}`);
    expect(await connectFrom(nsOf(a), LINK_LOCAL, 8080)).toBe("timeout");

    // c cannot borrow a's address to get out: the bridge drops the frames at c's port (counter), before
    // routing could forward them
    const spoofDrops = chainDrops("bridge", "prerouting");
    sh("nsenter", [`--net=${nsOf(c)}`, "ip", "addr", "add", `${na.ip}/32`, "dev", "eth0"]);
    expect(await connectFrom(nsOf(c), EXT_SERVER, 8080, na.ip)).toBe("timeout");
    expect(chainDrops("bridge", "prerouting")).toBeGreaterThan(spoofDrops);
    sh("nsenter", [`--net=${nsOf(c)}`, "ip", "addr", "del", `${na.ip}/32`, "dev", "eth0"]);

    await nc.setInternetAccess(true);
    expect(setMembers("inet", "internet")).toContain(nc.ip);
    expect(await connectFrom(nsOf(c), EXT_SERVER, 8080)).toBe(`ok ${EXT_HOST}`);
    await na.setInternetAccess(false);
    expect(await connectFrom(nsOf(a), EXT_SERVER, 8080)).toBe("timeout");

    await na.release();
    await nc.release();
    expect(existsSync(`/sys/class/net/${na.hostVeth}`)).toBe(false);
    expect(existsSync(`/sys/class/net/${nc.hostVeth}`)).toBe(false);
    expect(setMembers("inet", "internet")).not.toContain(nc.ip);
    expect(setMembers("bridge", "bound")).not.toContain(nc.ip);
    await nc.release(); // idempotent
  });

  it("re-adopts after a restart and reaps what nobody claims", async () => {
    const a = await spawnSandbox();
    const b = await spawnSandbox();
    const na = await nm.attach("keep", a, { allowInternetAccess: true });
    const nb = await nm.attach("lost", b, { allowInternetAccess: true });

    // A new manager for the same instance, as after a restart: setup keeps running sandboxes connected.
    const restarted = createNetworkManager({ instance, subnet });
    await restarted.setup();
    expect(await connectFrom(nsOf(a), EXT_SERVER, 8080)).toBe(`ok ${EXT_HOST}`);
    const adopted = restarted.adopt("keep", na.ip, na.hostVeth, true);
    expect(() => restarted.adopt("other", nb.ip, na.hostVeth, true)).toThrow(NetworkError);

    const reaped = await restarted.reapOrphans(["keep"]);
    expect(reaped).toEqual([nb.hostVeth]);
    expect(existsSync(`/sys/class/net/${nb.hostVeth}`)).toBe(false);
    expect(setMembers("inet", "internet")).not.toContain(`${nb.ip},`);
    expect(setMembers("inet", "internet")).toContain(na.ip);
    expect(setMembers("bridge", "bound")).not.toContain(nb.hostVeth);
    expect(await connectFrom(nsOf(a), EXT_SERVER, 8080)).toBe(`ok ${EXT_HOST}`);

    // A fresh attach never reuses a leased address.
    const c = await spawnSandbox();
    const nc = await restarted.attach("new", c, { allowInternetAccess: false });
    expect(nc.ip).not.toBe(na.ip);
    await nc.release();
    await adopted.release();
    expect(existsSync(`/sys/class/net/${na.hostVeth}`)).toBe(false);
    nm = restarted;
  });

  it("honours an aborted signal and leaves no veth behind", async () => {
    const pid = await spawnSandbox();
    const ac = new AbortController();
    ac.abort();
    const err = await nm.attach("aborted", pid, { allowInternetAccess: false, signal: ac.signal }).catch((e: unknown) => e);
    expect((err as NetworkError).code).toBe("aborted");
    expect(links().filter((l) => l.startsWith(`b${instance}-`))).toEqual([]);
  });

  it("releases sandboxes released together, with their egress chains, and frees their addresses", async () => {
    const pids = await Promise.all(Array.from({ length: 6 }, () => spawnSandbox()));
    const nets = await Promise.all(pids.map((pid, i) => nm.attach(`together-${i}`, pid, { allowInternetAccess: i % 2 === 0 })));
    await nets[1]?.setEgress(false, { allowOut: ["198.51.100.0/28"], denyOut: [] });
    const chains = () => sh("nft", ["list", "table", "inet", `burrow_${instance}`]);
    expect(chains()).toMatch(/chain egress_/);
    // Half of them killed first, as a sandbox's netns dies with it and takes the veth along.
    for (const pid of pids.slice(0, 3)) process.kill(pid, "SIGKILL");

    await Promise.all(nets.map((n) => n.release()));

    for (const n of nets) {
      expect(existsSync(`/sys/class/net/${n.hostVeth}`)).toBe(false);
      expect(setMembers("inet", "internet")).not.toMatch(new RegExp(`\\b${n.ip.replaceAll(".", "\\.")}\\b`));
      expect(setMembers("bridge", "bound")).not.toContain(n.hostVeth);
      expect(setMembers("bridge", "macs")).not.toContain(n.hostVeth);
    }
    expect(chains()).not.toMatch(/chain egress_/);
    // Each address can be leased again by another sandbox (reserving a leased one is refused).
    const again = nets.map((n, i) => nm.reserve(`again-${i}`, { allowInternetAccess: false, ip: n.ip }));
    await Promise.all(again.map((r) => r.firewall));
    await Promise.all(again.map((r) => r.network.release()));
    expect(links().filter((l) => l.startsWith(`b${instance}-`))).toEqual([]);
  });

  it("tears down everything and restores ip_forward", async () => {
    const pid = await spawnSandbox();
    await nm.attach("last", pid, { allowInternetAccess: true });
    await nm.teardown();
    expect(existsSync(`/sys/class/net/${nm.bridge}`)).toBe(false);
    expect(links().filter((l) => l.startsWith(`b${instance}-`))).toEqual([]);
    expect(tables()).not.toContain(`table inet burrow_${instance}`);
    expect(tables()).not.toContain(`table bridge burrow_${instance}`);
    const registry = existsSync("/run/burrow/ip-forward.json")
      ? (JSON.parse(readFileSync("/run/burrow/ip-forward.json", "utf8")) as { holders: string[] })
      : { holders: [] };
    expect(registry.holders).not.toContain(instance);
    // The last instance out restores the host's value; while another Burrow instance still needs forwarding
    // (a server running beside the tests), it stays on.
    expect(readFileSync(ip_forward, "utf8").trim()).toBe(registry.holders.length > 0 ? "1" : before.ipForward);
  });
});
