#!/usr/bin/env node
// Makes a fresh Debian 12 checkout runnable: installs missing Debian packages and npm packages, builds the
// TypeScript packages, the envd bundle and the native launcher, and links the `burrow` command into
// /usr/local/bin. Every step is skipped when already done, so `npm start` and `npm test` stay fast on the
// second run. Plain Node, no dependencies: it runs before node_modules exists.
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { accessSync, chmodSync, constants, existsSync, lstatSync, readFileSync, readlinkSync, renameSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Debian packages the runtime and its tests need, by the command or file that proves each is present. */
const DEBIAN_PACKAGES = [
  ["debootstrap", "/usr/sbin/debootstrap"], // builds the base template
  ["nftables", "/usr/sbin/nft"], // sandbox firewall
  ["iptables", "/usr/sbin/iptables-nft"], // the egress judge's NFQUEUE rule (this kernel has xt NFQUEUE, no nft queue)
  ["iproute2", "/usr/sbin/ip"], // bridge, veth
  ["util-linux", "/usr/bin/nsenter"],
  ["libseccomp-dev", "/usr/include/seccomp.h"], // launcher's seccomp filter
  ["gcc", "/usr/bin/gcc"],
  ["g++", "/usr/bin/g++"], // native npm addons
  ["make", "/usr/bin/make"],
  ["python3", "/usr/bin/python3"], // node-gyp
  ["attr", "/usr/bin/getfattr"],
  ["nats-server", "/usr/sbin/nats-server"], // bus backend and its tests
  ["bubblewrap", "/usr/bin/bwrap"], // benchmark baseline
  ["procps", "/usr/bin/pgrep"],
  ["btrfs-progs", "/usr/bin/btrfs"], // sandbox disk limits (qgroups) and cheap snapshots
  ["zstd", "/usr/bin/zstd"], // zstd-compressed image layers (GNU tar calls it)
  ["openssl", "/usr/bin/openssl"], // the local CA behind HTTPS on the server's port
  // getHost() names (*.burrow.localhost) resolve to loopback for Node and Python too, not only browsers and curl
  ["libnss-myhostname", `/usr/lib/${process.arch === "arm64" ? "aarch64" : "x86_64"}-linux-gnu/libnss_myhostname.so.2`],
];

/** Only `npm test` and `npm run bench` (`--test`) need these: the server never runs them. */
const TEST_PACKAGES = [
  ["docker-registry", "/usr/bin/docker-registry"], // a real OCI registry, started on the loopback by the tests
  ["chromium", "/usr/bin/chromium"], // a real browser on the host: desktop streams (noVNC) and CDP through the gateway
];
const forTests = process.argv.includes("--test");

function log(message) {
  process.stderr.write(`[bootstrap] ${message}\n`);
}

function run(cmd, args, opts = {}) {
  const result = spawnSync(cmd, args, { stdio: "inherit", cwd: root, ...opts });
  if (result.status !== 0) {
    log(`'${cmd} ${args.join(" ")}' failed with exit code ${result.status ?? result.signal}`);
    process.exit(result.status ?? 1);
  }
}

function installDebianPackages() {
  const wanted = forTests ? [...DEBIAN_PACKAGES, ...TEST_PACKAGES] : DEBIAN_PACKAGES;
  const missing = wanted.filter(([, probe]) => !existsSync(probe)).map(([pkg]) => pkg);
  if (missing.length === 0) return;
  if (process.getuid?.() !== 0) {
    log(`missing Debian packages: ${missing.join(" ")}; run as root or install them with apt-get`);
    process.exit(1);
  }
  log(`installing Debian packages: ${missing.join(" ")}`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  run("apt-get", ["update", "-qq"], { env });
  run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], { env });
  // Debian enables the registry as a system service listening on every interface; tests start their own.
  if (missing.includes("docker-registry") && existsSync("/run/systemd/system")) {
    run("systemctl", ["disable", "--now", "docker-registry.service"]);
  }
}

const NSSWITCH = "/etc/nsswitch.conf";

/** getHost() names (`*.burrow.localhost`) resolve to loopback for glibc programs (Node, Python) through nss-myhostname. */
function enableMyhostname() {
  if (!existsSync(NSSWITCH)) return;
  addMyhostname();
  // What the server checks at start too: without it, sandboxes are created with no domain and getHost() leads to E2B.
  const resolved = spawnSync("getent", ["ahostsv4", "49983-check.burrow.localhost"], { encoding: "utf8" });
  if (!/^127\./.test(resolved.stdout ?? "")) {
    log(`*.burrow.localhost does not resolve to 127.0.0.1 here (see the hosts line of ${NSSWITCH}); getHost() URLs will not reach Burrow`);
  }
}

/**
 * Put `myhostname` on the hosts line of /etc/nsswitch.conf, after `files` as libnss-myhostname's own script does on a
 * first install (it does nothing on a reinstall or when the line was edited since). Only that line changes, and only
 * when `myhostname` is missing from it.
 */
function addMyhostname() {
  const text = readFileSync(NSSWITCH, "utf8");
  const lines = text.split("\n");
  const index = lines.findIndex((line) => /^hosts:/.test(line));
  const active = index >= 0 ? lines[index].split("#")[0] : "";
  if (/\smyhostname(\s|$)/.test(active)) return;
  if (process.getuid?.() !== 0) {
    log(`add 'myhostname' to the hosts line of ${NSSWITCH} (as root) so that getHost() names resolve for Node and Python`);
    return;
  }
  if (index < 0) {
    lines.splice(lines.length - (lines.at(-1) === "" ? 1 : 0), 0, "hosts:          files myhostname dns");
  } else {
    const [head, ...comment] = lines[index].split("#");
    const sources = head.replace(/^hosts:\s*/, "").trim().split(/\s+/).filter(Boolean);
    // After `files` and its [action] if it has one, else first.
    let at = sources.indexOf("files") + 1;
    if (at > 0 && sources[at]?.startsWith("[")) at++;
    sources.splice(at, 0, "myhostname");
    lines[index] = `hosts:          ${sources.join(" ")}${comment.length ? ` #${comment.join("#")}` : ""}`;
  }
  const tmp = `${NSSWITCH}.burrow-tmp`;
  writeFileSync(tmp, lines.join("\n"), { mode: statSync(NSSWITCH).mode & 0o777 });
  renameSync(tmp, NSSWITCH);
  log(`added 'myhostname' to the hosts line of ${NSSWITCH}: *.localhost names resolve to loopback`);
}

function lockHash() {
  return createHash("sha256").update(readFileSync(join(root, "package-lock.json"))).digest("hex");
}

function installNpmPackages() {
  const marker = join(root, "node_modules", ".burrow-lock-hash");
  const want = lockHash();
  if (existsSync(marker) && readFileSync(marker, "utf8") === want) return;
  log("installing npm packages (native addons build from source: about two minutes on a fresh machine)");
  run("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"]);
  writeFileSync(marker, want);
}

function build() {
  log("building");
  run(process.execPath, [join(root, "scripts", "build.mjs")]);
}

/** Where the `burrow` command is linked: on PATH for every user on Debian. */
const COMMAND_LINK = "/usr/local/bin/burrow";
const COMMAND_TARGET = join(root, "packages", "cli", "bin", "burrow.js");

/**
 * Put `burrow` on the PATH as a symlink to this checkout's CLI. Idempotent and quiet once done; a file of
 * anyone else's at that path (another install, another checkout) is left alone, and `npx burrow` still works.
 */
function linkCommand() {
  try {
    accessSync(COMMAND_TARGET, constants.X_OK);
  } catch {
    try {
      chmodSync(COMMAND_TARGET, 0o755); // a checkout made without file modes
    } catch (error) {
      log(`cannot make ${COMMAND_TARGET} executable (${error.code}); 'node ${COMMAND_TARGET}' still works`);
    }
  }
  const existing = lstatSync(COMMAND_LINK, { throwIfNoEntry: false });
  if (existing) {
    const pointsHere = existing.isSymbolicLink() && resolve(dirname(COMMAND_LINK), readlinkSync(COMMAND_LINK)) === COMMAND_TARGET;
    if (!pointsHere) log(`${COMMAND_LINK} exists and is not this checkout's; left alone (run 'npx burrow' here instead)`);
    return;
  }
  try {
    symlinkSync(COMMAND_TARGET, COMMAND_LINK);
  } catch (error) {
    log(`cannot link ${COMMAND_LINK} (${error.code}); run 'npx burrow' in this checkout, or as root: ln -s ${COMMAND_TARGET} ${COMMAND_LINK}`);
    return;
  }
  const onPath = (process.env.PATH ?? "").split(delimiter).includes(dirname(COMMAND_LINK));
  log(`linked ${COMMAND_LINK} -> ${COMMAND_TARGET}${onPath ? "" : ` (add ${dirname(COMMAND_LINK)} to PATH to run 'burrow')`}`);
}

installDebianPackages();
enableMyhostname();
installNpmPackages();
build();
linkCommand();
