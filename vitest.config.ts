import { defineConfig } from "vitest/config";

// Suites start real sandboxes, servers and nats-server processes on a 2-core machine: files run one at a time
// so that they do not starve each other, and timeouts allow for a cold machine.
export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "test/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 600_000,
    pool: "forks",
    reporters: ["default"],
  },
});
