import { Filesystem, Process } from "@burrow/protocol";
import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";

/** A plain Connect client (JSON, HTTP/1.1), for the RPCs and headers the official SDK never uses. */
export function rpcClients(url: string, token: string | undefined, user?: string): {
  process: Client<typeof Process>;
  filesystem: Client<typeof Filesystem>;
} {
  const auth: Interceptor = (next) => (req) => {
    if (token) req.header.set("X-Access-Token", token);
    if (user) req.header.set("Authorization", `Basic ${Buffer.from(`${user}:`).toString("base64")}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: false, interceptors: [auth] });
  return { process: createClient(Process, transport), filesystem: createClient(Filesystem, transport) };
}
