import { defineConfig } from "vitest/config";

// Suites start real sandboxes, servers and nats-server processes on a 2-core machine: files run one at a time
// so that they do not starve each other, and timeouts allow for a cold machine.
const shared = {
  fileParallelism: false,
  testTimeout: 60_000,
  hookTimeout: 600_000,
  pool: "forks" as const,
};

export default defineConfig({
  test: {
    // One file at a time across both projects: sandboxes and servers are heavy on two cores.
    maxWorkers: 1,
    projects: [
      // Package suites: each part against the real kernel/processes it drives, no shared server.
      { test: { ...shared, name: "packages", include: ["packages/*/test/**/*.test.ts"] } },
      // End-to-end suites: the official SDKs against one real Burrow server started by the global setup.
      {
        test: {
          ...shared,
          name: "e2e",
          include: ["test/**/*.test.ts"],
          globalSetup: ["test/setup/global-server.ts"],
        },
      },
    ],
  },
});
