// The fake internet for egress tests and benchmarks. Its implementation is plain JavaScript (fake-internet.mjs, typed
// by fake-internet.d.mts) so that the benchmarks (bench/*.mjs) run it too; tests import it from here.
export { DNS_ADDRESS, FAKE_PREFIX, startFakeInternet } from "./fake-internet.mjs";
export type { FakeInternet, FakeInternetOptions } from "./fake-internet.mjs";
