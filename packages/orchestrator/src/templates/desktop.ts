// The shipped `desktop` template, under the name the official `@e2b/desktop` SDK asks for: the base template plus
// Chromium as in the `browser` template (chromium-files.ts), Debian's X and xfce packages and everything the SDK
// runs inside (Xvfb, xdpyinfo, startxfce4, xdotool, scrot, xrandr, xdg-open, gtk-launch, x11vnc, noVNC at
// /opt/noVNC with websockify, netstat, pgrep/pkill), Firefox ESR and a text editor (mousepad). Built the first
// time it is asked for.
//
// The start command starts the desktop the SDK's create starts with its default options (Xvfb on :0 at
// 1024x768x24, 96 dpi, then an xfce session), so a sandbox from the warm pool hands it out already running. The SDK
// then starts Xvfb and startxfce4 itself: wrappers of both in /usr/local/bin (ahead of /usr/bin in PATH) find the
// desktop running with exactly those arguments and leave it be; asked for other arguments (a resolution or DPI of
// the caller's), the Xvfb wrapper stops the prestarted desktop and starts the real Xvfb with them.
import type { BuildSpec } from "./builder/build-spec.js";
import { CHROMIUM_FILES, CHROMIUM_PACKAGES } from "./chromium-files.js";
import { aptInstallStep, writeFilesStep, type ShippedTemplate } from "./shipped-template.js";

/** The name `@e2b/desktop` uses (`Sandbox.defaultTemplate`). */
export const DESKTOP_TEMPLATE = "desktop";

export const DESKTOP_PACKAGES: readonly string[] = [
  "xvfb",
  "x11-utils", // xdpyinfo: the SDK waits for the display with it
  "x11-xserver-utils", // xrandr (getScreenSize), xset
  "xdotool",
  "scrot",
  "xfce4",
  "dbus-x11", // xfce4-session starts its session bus with dbus-launch
  "xdg-utils", // xdg-open (open)
  "libgtk-3-bin", // gtk-launch (launch)
  "x11vnc",
  "novnc",
  "websockify",
  "net-tools", // netstat: the SDK waits for noVNC's port with it
  "firefox-esr",
  "mousepad",
];

/** Where the prestarted desktop keeps what the wrappers need to recognise it. */
const STATE = "/tmp/.burrow-desktop";
/** Exactly the arguments `@e2b/desktop` starts Xvfb with by default (resolution 1024x768, dpi 96). */
const DEFAULT_XVFB_ARGS = ":0 -ac -screen 0 1024x768x24 -retro -dpi 96 -nolisten tcp -nolisten unix";

const startDesktop = `#!/bin/sh
# Burrow's desktop, started before a sandbox is handed out: what @e2b/desktop's Sandbox.create() starts with its
# default options. The Xvfb and startxfce4 in /usr/local/bin recognise it when the SDK starts the same again.
set -eu
state=${STATE}
rm -rf "$state"
mkdir -p "$state"
/usr/bin/Xvfb ${DEFAULT_XVFB_ARGS} >"$state/xvfb.log" 2>&1 &
xvfb=$!
tries=0
until xdpyinfo -display :0 >/dev/null 2>&1; do
  if ! kill -0 "$xvfb" 2>/dev/null; then cat "$state/xvfb.log" >&2; exit 1; fi
  tries=$((tries + 1))
  if [ "$tries" -ge 400 ]; then echo "Xvfb did not answer on :0" >&2; exit 1; fi
  sleep 0.05
done
DISPLAY=:0 /usr/bin/startxfce4 >"$state/session.log" 2>&1 &
session=$!
# Written last: the wrappers act on a desktop only once all of it is known.
ps -o pgid= -p $$ | tr -d ' ' >"$state/pgid"
echo "$session" >"$state/session.pid"
echo "$xvfb" >"$state/xvfb.pid"
printf '%s\\n' "${DEFAULT_XVFB_ARGS}" >"$state/xvfb.args"
wait
`;

const xvfbWrapper = `#!/bin/sh
# Xvfb, aware of the desktop Burrow starts ahead of time (/usr/local/bin/burrow-desktop). Asked for with the
# arguments that desktop runs with, the running server is the one asked for; asked for anything else, the
# prestarted desktop goes (its whole process group) and the real Xvfb starts with the arguments given.
state=${STATE}
if [ -f "$state/xvfb.args" ]; then
  if [ "$*" = "$(cat "$state/xvfb.args")" ] && kill -0 "$(cat "$state/xvfb.pid")" 2>/dev/null; then
    exit 0
  fi
  pgid=$(cat "$state/pgid")
  rm -rf "$state"
  kill -TERM -"$pgid" 2>/dev/null
  # The new server needs the display free, and the caller's check for its new session must not find the old
  # session's processes. (dbus-launch lingers a moment after its session; it goes by itself.)
  tries=0
  while pgrep -g "$pgid" -x 'Xvfb|xfce4-session|xfwm4|xfdesktop' >/dev/null && [ "$tries" -lt 100 ]; do
    tries=$((tries + 1))
    sleep 0.05
  done
  if [ "$tries" -ge 100 ]; then kill -KILL -"$pgid" 2>/dev/null; fi
fi
exec /usr/bin/Xvfb "$@"
`;

const startxfce4Wrapper = `#!/bin/sh
# startxfce4, aware of the desktop Burrow starts ahead of time: while that session runs on this display (the Xvfb
# wrapper kept it), a second session on the same display is not what the caller wants.
state=${STATE}
if [ "\${DISPLAY:-}" = ":0" ] && [ -f "$state/session.pid" ] && kill -0 "$(cat "$state/session.pid")" 2>/dev/null; then
  exit 0
fi
exec /usr/bin/startxfce4 "$@"
`;

// The X server blanks an idle screen after 10 minutes by default; screenshots of an agent's idle desktop would
// come back black.
const noBlanking = `[Desktop Entry]
Type=Application
Name=Keep the screen on
Exec=xset s off -dpms
NoDisplay=true
`;

function desktopSpec(): BuildSpec {
  return {
    fromTemplate: "base",
    force: false,
    steps: [
      // The same first steps as the `browser` template: the two share these layers (the builder caches steps by
      // their base and content), so whichever is built second downloads only what it adds.
      aptInstallStep(CHROMIUM_PACKAGES),
      writeFilesStep(CHROMIUM_FILES),
      aptInstallStep(DESKTOP_PACKAGES),
      writeFilesStep([
        { path: "/usr/local/bin/burrow-desktop", content: startDesktop, mode: "0755" },
        { path: "/usr/local/bin/Xvfb", content: xvfbWrapper, mode: "0755" },
        { path: "/usr/local/bin/startxfce4", content: startxfce4Wrapper, mode: "0755" },
        { path: "/etc/xdg/autostart/burrow-no-blanking.desktop", content: noBlanking, mode: "0644" },
      ]),
      // The SDK runs noVNC from E2B's path.
      { type: "RUN", args: ["ln -sfn /usr/share/novnc /opt/noVNC", "root"], force: false },
      { type: "USER", args: ["user"], force: false },
      { type: "WORKDIR", args: ["/home/user"], force: false },
      // UTF-8 text: xdotool refuses to type anything beyond ASCII in the POSIX locale.
      { type: "ENV", args: ["DISPLAY", ":0", "LANG", "C.UTF-8", DESKTOP.versionEnv, DESKTOP.version], force: false },
    ],
    startCmd: "exec /usr/local/bin/burrow-desktop",
    // The SDK's own check that the session is up, and then its desktop and panel on the screen: a sandbox is handed
    // out once a screenshot shows the desktop, not a bare background.
    readyCmd:
      "pgrep -x xfce4-session >/dev/null && pgrep -x xfwm4 >/dev/null && pgrep -x xfdesktop >/dev/null && " +
      "xdotool search --onlyvisible --class xfdesktop >/dev/null && xdotool search --onlyvisible --class xfce4-panel >/dev/null",
  };
}

export const DESKTOP: ShippedTemplate = {
  name: DESKTOP_TEMPLATE,
  aliases: [],
  versionEnv: "BURROW_DESKTOP_TEMPLATE",
  version: "1",
  limits: { cpuCount: 2, memoryMB: 4096 },
  spec: desktopSpec,
  prestartInPool: true,
};
