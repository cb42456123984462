// Everything that determines the template's content lives here, and the cache key is a hash of
// it: change a package or the setup script and every machine rebuilds instead of reusing a stale tarball.
import { createHash } from "node:crypto";

export const BASE_SUITE = "bookworm";

/** Packages added to debootstrap's minbase: what agents expect on "a Linux computer", kept lean. */
export const BASE_PACKAGES: readonly string[] = [
  "bash",
  "ca-certificates",
  "curl",
  "git",
  "python3",
  "python-is-python3",
  "attr",
  "procps",
  "sudo",
  "less",
  "iproute2",
  "netbase", // /etc/services and /etc/protocols: getservbyname() and friends fail without them
];

export const BASE_USER = { name: "user", uid: 1000, gid: 1000, home: "/home/user", shell: "/bin/bash" } as const;

/**
 * Runs inside the chroot after debootstrap (with network, so the security suite is applied).
 * Leaves no apt caches or lists behind: they are 80 MB of every sandbox's disk.
 */
export const BASE_SETUP_SCRIPT = `set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get -y -o Dpkg::Options::=--force-confold dist-upgrade
groupadd -g ${BASE_USER.gid} ${BASE_USER.name}
useradd -m -u ${BASE_USER.uid} -g ${BASE_USER.gid} -d ${BASE_USER.home} -s ${BASE_USER.shell} ${BASE_USER.name}
echo '${BASE_USER.name} ALL=(ALL:ALL) NOPASSWD:ALL' > /etc/sudoers.d/${BASE_USER.name}
chmod 0440 /etc/sudoers.d/${BASE_USER.name}
apt-get clean
rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/lib/dpkg/*-old
rm -f /var/log/*.log /var/log/apt/* /etc/machine-id
: > /etc/machine-id
# The orchestrator names every sandbox host "sandbox": make it resolve (sudo warns on each call otherwise).
printf 'sandbox\\n' > /etc/hostname
printf '127.0.0.1\\tlocalhost\\n127.0.1.1\\tsandbox\\n::1\\tlocalhost ip6-localhost ip6-loopback\\n' > /etc/hosts
# resolv.conf is the host's during the build; the network layer writes the sandbox's own.
: > /etc/resolv.conf
`;

/** Bump when the build procedure changes in a way the fields above do not capture. */
const RECIPE_VERSION = 1;

/** Hex key naming the cached tarball of this recipe. */
export function baseRecipeKey(): string {
  const recipe = JSON.stringify({ v: RECIPE_VERSION, suite: BASE_SUITE, packages: BASE_PACKAGES, script: BASE_SETUP_SCRIPT });
  return createHash("sha256").update(recipe).digest("hex").slice(0, 16);
}
