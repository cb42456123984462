// How long tests poll real processes, kernels and files for a state (vi.waitFor, expect.poll): the defaults (one
// second, every 50 ms) are too short for sandboxes on a loaded two-core machine.
export const POLL = { timeout: 20_000, interval: 20 } as const;
