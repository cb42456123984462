// Named services on the host that every sandbox reaches at `http://<name>:<port>/` (port 80 by default): the name is
// answered with the sandbox's gateway by Burrow's resolver (and written to /etc/hosts of sandboxes prepared after
// it is registered), and nft DNATs gateway:port to gateway:hostPort, where the service listens (on the gateway
// address or 0.0.0.0). The service sees the sandbox's own address as the client's, so it can tell sandboxes apart.
// Several names may share a port when they share the listener too (one TLS listener serving names by SNI).
import { BurrowError, Code } from "@burrow/protocol";

export interface HostService {
  /** A DNS name, e.g. `models.burrow`: letters, digits, dashes, dots. */
  name: string;
  /** Where the service listens on the host. */
  hostPort: number;
  /** The port sandboxes use. @default 80 */
  port?: number;
  /**
   * Whether sandboxes prepared after it is registered get the name in /etc/hosts too. Off for names that may be taken
   * back while sandboxes run (the resolver stops answering them at once; a hosts file would keep them).
   * @default true
   */
  hostsFile?: boolean;
}

const NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

export class HostServices {
  readonly #services = new Map<string, Required<HostService>>();

  /** Validated and added (replacing one of the same name); throws InvalidArgument naming what is wrong. */
  add(service: HostService): Required<HostService> {
    const name = service.name.toLowerCase().replace(/\.$/, "");
    const port = service.port ?? 80;
    if (!NAME.test(name)) throw invalid(`host service name '${service.name}' is not a DNS name`);
    for (const [field, value] of [["hostPort", service.hostPort], ["port", port]] as const) {
      if (!Number.isInteger(value) || value < 1 || value > 65535) throw invalid(`host service ${name}: ${field} ${value} is not a TCP port`);
    }
    if (port === 53) throw invalid(`host service ${name}: port 53 is the resolver's`);
    for (const other of this.#services.values()) {
      if (other.name !== name && other.port === port && other.hostPort !== service.hostPort) {
        throw invalid(`host service ${name}: port ${port} is already ${other.name}'s`);
      }
    }
    const entry = { name, hostPort: service.hostPort, port, hostsFile: service.hostsFile ?? true };
    this.#services.set(name, entry);
    return entry;
  }

  remove(name: string): boolean {
    return this.#services.delete(name.toLowerCase());
  }

  list(): Required<HostService>[] {
    return [...this.#services.values()];
  }

  names(): ReadonlySet<string> {
    return new Set(this.#services.keys());
  }
}

function invalid(message: string): BurrowError {
  return new BurrowError(Code.InvalidArgument, message, { reason: "invalid_host_service" });
}
