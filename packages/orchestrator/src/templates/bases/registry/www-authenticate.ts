// The registry's auth challenge (RFC 7235 `WWW-Authenticate`), e.g.
// `Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/python:pull"`.

export interface AuthChallenge {
  scheme: string;
  params: Record<string, string>;
}

/** The first challenge of the header (registries send one); undefined when the header is absent or unparsable. */
export function parseAuthChallenge(header: string | undefined): AuthChallenge | undefined {
  if (!header) return undefined;
  const match = /^\s*([A-Za-z][\w-]*)\s*(.*)$/.exec(header);
  if (!match) return undefined;
  const params: Record<string, string> = {};
  const paramRe = /([A-Za-z][\w-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]*))\s*,?\s*/g;
  for (const m of (match[2] ?? "").matchAll(paramRe)) {
    params[(m[1] as string).toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, "$1") : (m[3] ?? "");
  }
  return { scheme: (match[1] as string).toLowerCase(), params };
}
