#!/bin/sh
# Build burrow-sandbox. Idempotent and fast: does nothing when the binary is newer than every
# source. Usage: build.sh [OUT_DIR]   (default: ../dist/native, i.e. packages/orchestrator/dist/native)
# Needs gcc and libseccomp-dev. Links libseccomp statically when the static archive is present,
# so the binary does not depend on the runtime library being installed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../dist/native"}
mkdir -p "$out"
bin="$out/burrow-sandbox"
stale=yes
if [ -x "$bin" ]; then
  stale=$(find "$here" -maxdepth 1 \( -name '*.c' -o -name '*.h' -o -name build.sh \) -newer "$bin" | head -n 1)
fi
if [ -n "$stale" ]; then
  seccomp_lib=-lseccomp
  for a in /usr/lib/*/libseccomp.a /usr/lib/libseccomp.a; do
    [ -f "$a" ] && seccomp_lib=$a && break
  done
  tmp="$bin.tmp.$$"
  trap 'rm -f "$tmp"' EXIT
  gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -pie \
    -Wl,-z,relro,-z,now -o "$tmp" "$here"/*.c $seccomp_lib
  mv -f "$tmp" "$bin"
fi

# burrow-netattach: the launcher's network plumbing (netlink.c) for namespaces the launcher did not make.
netattach="$out/burrow-netattach"
if [ ! -x "$netattach" ] || [ -n "$(find "$here/netattach/netattach.c" "$here/netlink.c" "$here/sandbox.h" -newer "$netattach" | head -n 1)" ]; then
  gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -pie \
    -Wl,-z,relro,-z,now -o "$netattach.tmp.$$" "$here/netattach/netattach.c" "$here/netlink.c"
  mv -f "$netattach.tmp.$$" "$netattach"
fi

# burrow-reaper: the subreaper that parents every sandbox init (native/reaper/reaper.c).
reaper="$out/burrow-reaper"
if [ ! -x "$reaper" ] || [ -n "$(find "$here/reaper" -newer "$reaper" | head -n 1)" ]; then
  gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE -pie \
    -Wl,-z,relro,-z,now -o "$reaper.tmp.$$" "$here/reaper/reaper.c" "$here/reaper/command.c"
  mv -f "$reaper.tmp.$$" "$reaper"
fi

# burrow-relay.node: the egress proxy's splice relay and the direct path's egress judge (native/relay), an N-API
# addon. N-API is ABI-stable, so the headers of the Node that runs the build (NODE, else the node on PATH, else the
# system's) do; no node-gyp, no network. Without headers it is not built and the proxy relays in JS
# (src/egress/native-relay.ts says so).
relay="$out/burrow-relay.node"
if [ ! -f "$relay" ] || [ -n "$(find "$here/relay" "$here/build.sh" -newer "$relay" | head -n 1)" ]; then
  node_bin=${NODE:-$(command -v node || true)}
  node_inc=""
  for d in ${node_bin:+"$(dirname "$(dirname "$node_bin")")/include/node"} /usr/include/node /usr/local/include/node; do
    if [ -f "$d/node_api.h" ]; then node_inc=$d; break; fi
  done
  if [ -n "$node_inc" ]; then
    gcc -std=gnu11 -O2 -Wall -Wextra -Werror -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIC -shared -pthread \
      -Wl,-z,relro,-z,now -I"$node_inc" -o "$relay.tmp.$$" "$here/relay/relay.c" "$here/relay/addon.c" \
      "$here/relay/judge.c" "$here/relay/judge-peek.c" "$here/relay/judge-table.c" "$here/relay/judge-addon.c"
    mv -f "$relay.tmp.$$" "$relay"
  else
    echo "build.sh: node_api.h not found; burrow-relay.node not built (the egress proxy will relay in JS)" >&2
  fi
fi
