// The build leaves V8's code cache for envd's bundle beside it, made by this node with no flags, and V8 accepts it:
// every sandbox's envd then starts without compiling the bundle again (cached-entry.ts). A build that stops making
// the cache, or makes one V8 refuses (flags, another node), fails here rather than silently starting slower.
import { readFileSync } from "node:fs";
import { wrap } from "node:module";
import { join } from "node:path";
import { Script } from "node:vm";
import { beforeAll, expect, test } from "vitest";
import { BUNDLE, buildEnvd } from "./helpers/envd-fixture.js";

beforeAll(() => buildEnvd());

test("the bundle's code cache is there and V8 accepts it", () => {
  const main = join(BUNDLE, "..", "envd-main.cjs");
  const script = new Script(wrap(readFileSync(main, "utf8")), { filename: main, cachedData: readFileSync(join(BUNDLE, "..", "envd-main.cache")) });
  expect(script.cachedDataRejected).toBe(false);
});
