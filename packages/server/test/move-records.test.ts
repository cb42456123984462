// Move records (cluster/move-records.ts) as a node of another version may write them: a newer version is refused, so
// that a node never restores a sandbox from a record whose meaning it does not know; fields it does not know in a
// record of its version are kept; a record without its row, boot spec or archive is refused as data loss.
import { expect, it } from "vitest";
import { BurrowError, Code } from "@burrow/protocol";
import { MOVE_RECORD_VERSION, decodeMoveRecord, encodeMoveRecord, type MoveRecord } from "../src/cluster/move-records.js";

const record: MoveRecord = {
  v: MOVE_RECORD_VERSION,
  sandboxId: "abc123",
  node: "node-a",
  publishedAt: "2026-12-05T10:00:00.000Z",
  bootId: "boot-1",
  row: {
    templateId: "base",
    alias: "base",
    metadata: { k: "v" },
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 1024,
    startedAt: "2026-12-05T09:00:00.000Z",
    envdVersion: "0.2.0",
    envdAccessToken: "token",
    allowInternetAccess: true,
    teamId: null,
    apiKeyPublicId: null,
    mcpServers: null,
    lifecycle: { autoPause: false, autoPauseMemory: true, autoResume: false },
    timeoutSec: 300,
  },
  boot: { layers: [{ layerId: "l1", source: { shipped: "base", index: 0 } }], envVars: { A: "1" }, accessToken: "token" },
  limits: { cpuCount: 2, memoryMB: 512, diskMB: 1024, pids: 1024 },
  allowInternetAccess: true,
  writable: { digest: "d".repeat(64), size: 10 },
};

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function codeOf(fn: () => unknown): Code | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof BurrowError ? err.code : undefined;
  }
  return undefined;
}

it("round-trips a record and keeps fields a newer node of the same version added", () => {
  expect(decodeMoveRecord(encodeMoveRecord(record))).toEqual(record);
  expect(decodeMoveRecord(bytes({ ...record, extra: { later: true } }))).toMatchObject({ extra: { later: true } });
});

it("refuses a record of a newer version and one without its row, boot spec or archive", () => {
  expect(codeOf(() => decodeMoveRecord(bytes({ ...record, v: MOVE_RECORD_VERSION + 1 })))).toBe(Code.FailedPrecondition);
  for (const field of ["row", "boot", "writable", "sandboxId", "v"] as const) {
    const { [field]: _dropped, ...rest } = record;
    expect(codeOf(() => decodeMoveRecord(bytes(rest))), field).toBe(Code.DataLoss);
  }
  expect(codeOf(() => decodeMoveRecord(bytes(null)))).toBe(Code.DataLoss);
});
