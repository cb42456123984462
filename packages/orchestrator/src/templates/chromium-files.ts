// Chromium as the `browser` and `desktop` templates ship it: Debian's package, started with its DevTools protocol
// (CDP) reachable from outside the sandbox through the gateway (`9222-<id>.<domain>`, or E2b-Sandbox-Id with
// E2b-Sandbox-Port: 9222).
//
// Chromium serves CDP on 127.0.0.1 only (it ignores --remote-debugging-address) and refuses requests whose Host is
// neither an IP address nor localhost, while the gateway reaches a sandbox on its own address with the client's
// Host (`9222-<id>.example.com`). So nginx listens on port 9222 of every interface and forwards to Chromium on
// 127.0.0.1:9223 with Host 127.0.0.1:9223, and puts the client's Host back into the WebSocket URLs Chromium
// answers with (/json/version, /json/list), which playwright-core and puppeteer-core connect to next.
// Origin is forwarded untouched: Chromium still refuses WebSocket upgrades that a web page opens.

/** The port CDP is reachable on from outside the sandbox. */
export const CDP_PORT = 9222;
/** Where Chromium itself serves CDP, on the sandbox's loopback only. */
const CHROMIUM_CDP_PORT = 9223;

/** Starts Chromium with CDP on port 9222 (nginx in front); arguments go to Chromium. */
export const CHROMIUM_CDP_COMMAND = "/usr/local/bin/chromium-cdp";

const NGINX_CONF = "/etc/burrow/cdp-nginx.conf";
const RUN_DIR = "/tmp/.burrow-cdp";

const nginxConf = `# CDP front for Chromium (see /usr/local/bin/chromium-cdp). Runs as the sandbox user, so every path is its own.
worker_processes 1;
pid ${RUN_DIR}/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${RUN_DIR}/body;
  proxy_temp_path ${RUN_DIR}/proxy;
  fastcgi_temp_path ${RUN_DIR}/fastcgi;
  uwsgi_temp_path ${RUN_DIR}/uwsgi;
  scgi_temp_path ${RUN_DIR}/scgi;
  map $http_upgrade $connection_upgrade { default upgrade; '' close; }
  # A gateway in front that terminates TLS says so; the WebSocket URLs handed out then use wss.
  map $http_x_forwarded_proto $ws_scheme { https wss; default ws; }
  server {
    listen ${CDP_PORT};
    location / {
      proxy_pass http://127.0.0.1:${CHROMIUM_CDP_PORT};
      proxy_http_version 1.1;
      proxy_set_header Host 127.0.0.1:${CHROMIUM_CDP_PORT};
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Accept-Encoding "";
      proxy_read_timeout 7d;
      proxy_send_timeout 7d;
      sub_filter_types application/json;
      sub_filter_once off;
      sub_filter 'ws://127.0.0.1:${CHROMIUM_CDP_PORT}/' '$ws_scheme://$http_host/';
      sub_filter 'ws=127.0.0.1:${CHROMIUM_CDP_PORT}/' '$ws_scheme=$http_host/';
    }
  }
}
`;

const chromiumCdp = `#!/bin/sh
# Chromium with its DevTools protocol reachable from outside the sandbox on port ${CDP_PORT}
# (sandbox.getHost(${CDP_PORT}) through Burrow's gateway). Arguments go to Chromium, e.g. --headless or a URL.
# nginx (${NGINX_CONF}) forwards port ${CDP_PORT} to Chromium's own CDP port on 127.0.0.1:${CHROMIUM_CDP_PORT}.
set -eu
mkdir -p ${RUN_DIR}
if ! { [ -f ${RUN_DIR}/nginx.pid ] && kill -0 "$(cat ${RUN_DIR}/nginx.pid)" 2>/dev/null; }; then
  /usr/sbin/nginx -e stderr -c ${NGINX_CONF}
fi
exec /usr/bin/chromium --remote-debugging-port=${CHROMIUM_CDP_PORT} --no-first-run --no-default-browser-check "$@"
`;

/*
 * Chromium's own sandbox (layer 1) needs new user, pid and network namespaces, either directly or through its
 * setuid helper. Burrow's seccomp filter refuses unshare() and clone() with namespace flags in every sandbox, for
 * root too: a new user namespace would hand the sandbox a full capability set over fresh kernel surface (mounts,
 * netfilter), the source of many kernel exploits. Chromium then refuses to start ("No usable sandbox!") unless told
 * --no-sandbox. The Burrow sandbox around it (user namespace, seccomp, cgroup, own network) is the boundary.
 */
const chromiumFlags = `# Burrow: Chromium's sandbox needs new namespaces, which Burrow's seccomp filter refuses in every sandbox;
# the Burrow sandbox around Chromium is the security boundary. See "Computer use" in Burrow's README.
export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox"
`;

/** Files both templates add: the CDP launcher, its nginx front and Chromium's flags. */
export const CHROMIUM_FILES: readonly { path: string; content: string; mode: string }[] = [
  { path: NGINX_CONF, content: nginxConf, mode: "0644" },
  { path: CHROMIUM_CDP_COMMAND, content: chromiumCdp, mode: "0755" },
  { path: "/etc/chromium.d/burrow", content: chromiumFlags, mode: "0644" },
];

/** Debian packages for Chromium with a CDP front. */
export const CHROMIUM_PACKAGES: readonly string[] = ["chromium", "nginx", "fonts-dejavu-core", "fonts-liberation"];
