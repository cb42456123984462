// A fake internet for egress tests: a network namespace of its own holding "public" hosts at TEST-NET-3 addresses
// (203.0.113.0/24, RFC 5737), joined to the host by a veth (192.0.2.0/30, TEST-NET-1) and routed so that sandboxes
// reach it through Burrow's normal egress path (the forward chain and masquerading, like any internet destination).
// Every host answers HTTP on ports 80 and 8080 with "hello from <its address>" (`/bytes/<n>` with n bytes, `/headers` with the
// request's raw headers as a JSON array), echoes WebSocket text frames after a handshake (its 101 carries the
// handshake's raw headers as X-Upgrade-Headers) and tunnels a CONNECT to its own port (the 200 carries the CONNECT's
// raw headers as X-Connect-Headers). With `names`,
// a DNS server at DNS_ADDRESS maps test names (ending in .test, `*.x.test` wildcards, a list = one answer per A query,
// the last repeating: DNS rebinding) to fake hosts (TTL `ttl`, 0 by default), and every host also answers HTTPS on 443 and 8443 with a
// certificate for all those names from a test CA made here with openssl (`caCert`). Nothing leaves the machine:
// start() checks with `ip route get` that every fake address is routed into the namespace before it returns, and
// refuses to start when the prefix is routed anywhere already. close() removes what it created, by name and PID.
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const FAKE_PREFIX = "203.0.113.0/24";
const LINK_HOST = "192.0.2.1";
const LINK_NS = "192.0.2.2";
const LINK_PREFIX = "192.0.2.0/30";
/** Where the fake DNS server answers (UDP 53), when the fake internet has names. */
export const DNS_ADDRESS = "203.0.113.53";
const REPO = join(import.meta.dirname, "..", "..");

// Runs in the namespace (cwd: the repository, for dns-packet). Argument: JSON {names, cert?, key?}.
const SERVER = `const http=require("http"),https=require("https"),dgram=require("dgram"),dns=require("dns-packet");
const cfg=JSON.parse(process.argv[1]);
const handler=(q,r)=>{const m=/^\\/bytes\\/(\\d+)$/.exec(q.url);if(m){let left=Number(m[1]);r.writeHead(200,{"content-length":left});
const chunk=Buffer.alloc(65536);const pump=()=>{while(left>0){const n=Math.min(left,chunk.length);left-=n;if(!r.write(n===chunk.length?chunk:chunk.subarray(0,n))){r.once("drain",pump);return}}r.end()};pump();return}
if(q.url==="/headers"){r.setHeader("content-type","application/json");r.end(JSON.stringify(q.rawHeaders));return}
r.end("hello from "+q.socket.localAddress)};
const onUpgrade=(q,s,head)=>{s.on("error",()=>{});const accept=require("crypto").createHash("sha1").update((q.headers["sec-websocket-key"]||"")+"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
s.write("HTTP/1.1 101 Switching Protocols\\r\\nUpgrade: websocket\\r\\nConnection: Upgrade\\r\\nSec-WebSocket-Accept: "+accept+"\\r\\nX-Upgrade-Headers: "+JSON.stringify(q.rawHeaders)+"\\r\\n\\r\\n");
let buf=head;const echo=()=>{while(buf.length>=6){const len=buf[1]&127;if(len>125||buf.length<6+len)return;const mask=buf.subarray(2,6);s.write(Buffer.concat([Buffer.from([0x81,len]),buf.subarray(6,6+len).map((b,i)=>b^mask[i%4])]));buf=buf.subarray(6+len)}};
echo();s.on("data",(d)=>{buf=Buffer.concat([buf,d]);echo()})};
const onConnect=(q,s,head)=>{s.on("error",()=>{});const u=require("net").connect(Number(q.url.split(":").pop()),"127.0.0.1",()=>{s.write("HTTP/1.1 200 Connection established\\r\\nX-Connect-Headers: "+JSON.stringify(q.rawHeaders)+"\\r\\n\\r\\n");if(head.length)u.write(head);s.pipe(u);u.pipe(s)});u.on("error",()=>s.destroy())};
const serve=(server,port)=>{pending++;server.on("upgrade",onUpgrade).on("connect",onConnect).listen(port,"0.0.0.0",ready)};
let pending=1;const ready=()=>{if(--pending===0)console.log("listening")};
for(const port of [80,8080])serve(http.createServer(handler),port);
if(cfg.cert)for(const port of [443,8443])serve(https.createServer({cert:cfg.cert,key:cfg.key},handler),port);
if(cfg.names){pending++;const asked={};const sock=dgram.createSocket("udp4");
const lookup=(name)=>{if(cfg.names[name]!==undefined)return cfg.names[name];for(const k of Object.keys(cfg.names))if(k.startsWith("*.")&&name.endsWith(k.slice(1)))return cfg.names[k]};
sock.on("message",(msg,rinfo)=>{let q;try{q=dns.decode(msg)}catch{return}const qq=q.questions&&q.questions[0];if(!qq)return;
const name=qq.name.toLowerCase();console.log("Q "+qq.type+" "+name);const v=lookup(name);let answers=[];
if(v!==undefined&&qq.type==="A"){const list=Array.isArray(v)?v:[v];const i=asked[name]||0;asked[name]=i+1;answers=[{type:"A",name:qq.name,ttl:cfg.ttl,data:list[Math.min(i,list.length-1)]}]}
sock.send(dns.encode({type:"response",id:q.id,flags:dns.RECURSION_AVAILABLE|(v===undefined?3:0),questions:[qq],answers}),rinfo.port,rinfo.address)});
sock.bind(53,cfg.dns,ready)}
ready();`;

const run = (cmd, args) => execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

function tryRun(cmd, args) {
  try {
    run(cmd, args);
  } catch {
    // Clean-up of something that may already be gone.
  }
}

/** A test CA and a certificate for `names` and `ips` signed by it (openssl, in a temporary directory removed after). */
function makeCertificates(names, ips) {
  const dir = mkdtempSync(join(tmpdir(), "burrow-fake-ca-"));
  try {
    const f = (name) => join(dir, name);
    run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f("ca.key"), "-out", f("ca.pem"), "-days", "2", "-subj", "/CN=Burrow fake internet test CA"]);
    run("openssl", ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f("host.key"), "-out", f("host.csr"), "-subj", "/CN=fake.test"]);
    const san = [...names.map((n) => `DNS:${n}`), ...ips.map((ip) => `IP:${ip}`)].join(",");
    writeFileSync(f("ext.cnf"), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n`);
    run("openssl", ["x509", "-req", "-in", f("host.csr"), "-CA", f("ca.pem"), "-CAkey", f("ca.key"), "-CAcreateserial", "-out", f("host.pem"), "-days", "2", "-extfile", f("ext.cnf")]);
    return { ca: readFileSync(f("ca.pem"), "utf8"), cert: readFileSync(f("host.pem"), "utf8"), key: readFileSync(f("host.key"), "utf8") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** See fake-internet.d.mts. */
export async function startFakeInternet(hosts, opts = {}) {
  for (const name of Object.keys(opts.names ?? {})) if (!name.endsWith(".test")) throw new Error(`fake name ${name} does not end in .test`);
  if (opts.names) hosts = [...new Set([...hosts, DNS_ADDRESS])];
  for (const h of hosts) if (!h.startsWith("203.0.113.")) throw new Error(`fake host ${h} is outside ${FAKE_PREFIX}`);
  for (const prefix of [FAKE_PREFIX, LINK_PREFIX]) {
    const taken = run("ip", ["-4", "route", "show", "root", prefix]).trim();
    if (taken) throw new Error(`${prefix} is already routed (${taken}); another fake internet is running?`);
  }
  const rand = randomBytes(3).toString("hex");
  const netns = `bfi-${rand}`;
  const hostVeth = `bfih${rand}`;
  const nsVeth = `bfin${rand}`;
  let server;
  const queries = [];
  const certs = opts.names ? makeCertificates(Object.keys(opts.names), hosts) : undefined;
  const close = async () => {
    if (server?.pid !== undefined && server.exitCode === null) {
      server.kill("SIGKILL");
      await new Promise((resolve) => server.once("exit", resolve));
    }
    tryRun("ip", ["route", "del", FAKE_PREFIX, "via", LINK_NS, "dev", hostVeth]);
    tryRun("ip", ["link", "del", hostVeth]);
    tryRun("ip", ["netns", "del", netns]);
  };
  const assertRouted = () => {
    for (const h of hosts) {
      const [route] = JSON.parse(run("ip", ["-j", "route", "get", h]));
      if (route?.dev !== hostVeth) throw new Error(`${h} is routed via ${route?.dev ?? "nothing"}, not into ${netns}`);
    }
  };
  try {
    run("ip", ["netns", "add", netns]);
    run("ip", ["link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth, "netns", netns]);
    run("ip", ["addr", "add", `${LINK_HOST}/30`, "dev", hostVeth]);
    run("ip", ["link", "set", hostVeth, "up"]);
    const inNs = (args) => run("ip", ["-n", netns, ...args]);
    inNs(["link", "set", "lo", "up"]);
    inNs(["addr", "add", `${LINK_NS}/30`, "dev", nsVeth]);
    for (const h of hosts) inNs(["addr", "add", `${h}/32`, "dev", nsVeth]);
    inNs(["link", "set", nsVeth, "up"]);
    run("ip", ["route", "add", FAKE_PREFIX, "via", LINK_NS, "dev", hostVeth]);
    assertRouted();
    const config = JSON.stringify({ names: opts.names, ttl: opts.ttl ?? 0, dns: DNS_ADDRESS, cert: certs?.cert, key: certs?.key });
    server = spawn("ip", ["netns", "exec", netns, process.execPath, "-e", SERVER, config], { stdio: ["ignore", "pipe", "inherit"], cwd: REPO });
    let lines = "";
    server.stdout.on("data", (d) => {
      lines += d.toString();
      const done = lines.lastIndexOf("\n");
      for (const line of lines.slice(0, done + 1).split("\n")) if (line.startsWith("Q ")) queries.push(line.split(" ")[2]);
      lines = lines.slice(done + 1);
    });
    await new Promise((resolve, reject) => {
      server.stdout.on("data", (d) => d.toString().includes("listening") && resolve());
      server.once("exit", (code) => reject(new Error(`fake internet server exited ${code}`)));
    });
  } catch (err) {
    await close();
    throw err;
  }
  return { hosts, netns, caCert: certs?.ca, dnsQueries: () => [...queries], assertRouted, close };
}
