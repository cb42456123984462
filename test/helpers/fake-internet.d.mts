// Types of fake-internet.mjs (plain JavaScript, so that benchmarks can use it too; tests import fake-internet.ts).

export declare const FAKE_PREFIX: "203.0.113.0/24";
/** Where the fake DNS server answers (UDP 53), when the fake internet has names. */
export declare const DNS_ADDRESS: "203.0.113.53";

export interface FakeInternetOptions {
  /** Test names (each ending in `.test`) → a fake host's address, or a list answered in turn (the last repeats). */
  names?: Record<string, string | readonly string[]>;
  /** TTL of the DNS answers, seconds. @default 0 (every lookup reaches the fake DNS server) */
  ttl?: number;
}

export interface FakeInternet {
  /** The fake hosts' addresses (each answers HTTP on ports 80 and 8080, and HTTPS on 443 and 8443 with `names`). */
  readonly hosts: readonly string[];
  readonly netns: string;
  /** The test CA's certificate (PEM) that the HTTPS servers' certificate chains to; with `names` only. */
  readonly caCert: string | undefined;
  /** Names the fake DNS server was asked for (A and AAAA), in order. */
  dnsQueries(): string[];
  /** Fails unless every fake host is still routed into the namespace (call before traffic, if in doubt). */
  assertRouted(): void;
  close(): Promise<void>;
}

export declare function startFakeInternet(hosts: readonly string[], opts?: FakeInternetOptions): Promise<FakeInternet>;
