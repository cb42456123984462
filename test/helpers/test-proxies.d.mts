// Types of test-proxies.mjs.
export interface TestProxyOptions {
  host: string;
  port?: number;
  username?: string;
  password?: string;
  /** The address its connections to destinations leave from. */
  localAddress?: string;
}

export interface TestProxy {
  readonly port: number;
  /** `CONNECT <host>:<port>` per connection it made, `AUTH FAILED` per refused credential, in order. */
  readonly log: string[];
  close(): Promise<void>;
}

export declare function startSocks5Proxy(opts: TestProxyOptions): Promise<TestProxy>;
export declare function startHttpConnectProxy(opts: TestProxyOptions): Promise<TestProxy>;
