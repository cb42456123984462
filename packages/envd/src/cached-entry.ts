// envd's entry point as the runtime starts it (bundled to dist/envd.cjs): it runs the real bundle (envd-main.cjs,
// from main.ts) through V8's code cache for it, made at build time. Every sandbox starts a new envd, and without
// the cache each one parses and compiles the same few hundred kilobytes of JavaScript again before it can answer:
// about a sixth of its start-up. A cache V8 does not accept (another node, other flags) is ignored and the bundle
// compiles as usual. With BURROW_ENVD_WRITE_CODE_CACHE=<file> (the build), envd runs until SIGUSR2, then writes the
// cache there and exits: the build first sends it the requests a sandbox's first commands and file reads make, so
// that the functions on their path are compiled and in the cache too (V8 compiles a function on its first call;
// without them there, every sandbox's first command compiled that path).
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire, wrap } from "node:module";
import { join } from "node:path";
import { Script } from "node:vm";

const MAIN = join(__dirname, "envd-main.cjs");
const CACHE = join(__dirname, "envd-main.cache");

const writeTo = process.env.BURROW_ENVD_WRITE_CODE_CACHE;
delete process.env.BURROW_ENVD_WRITE_CODE_CACHE;

let cachedData: Buffer | undefined;
if (!writeTo) {
  try {
    cachedData = readFileSync(CACHE);
  } catch {
    // no cache (a development build): compiled as usual
  }
}
const script = new Script(wrap(readFileSync(MAIN, "utf8")), { filename: MAIN, cachedData });
const run = script.runInThisContext() as (exports: object, require: NodeJS.Require, module: object, filename: string, dirname: string) => void;
const mainModule = { exports: {}, filename: MAIN, id: MAIN, loaded: false };
run(mainModule.exports, createRequire(MAIN), mainModule, MAIN, __dirname);

if (writeTo) {
  process.once("SIGUSR2", () => {
    writeFileSync(writeTo, script.createCachedData());
    process.exit(0);
  });
}
