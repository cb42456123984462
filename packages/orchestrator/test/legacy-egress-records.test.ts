// What the orchestrator wrote before egress rules had `proxied` (a sandbox with header transforms or a user's proxy
// then carried a reserved .invalid deny entry) comes back after an upgrade as the proxying it stood for, from each
// file that keeps rules: a sandbox's record (re-adoption, cold boots, forks), a checkpoint's record (its children)
// and a snapshot's manifest (creates from it). Real files in a temporary directory.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkpointInfo, readCheckpointRecord } from "../src/checkpoints/checkpoint-record.js";
import { upgradeLegacyRules } from "../src/network/legacy-egress-rules.js";
import { readRecord } from "../src/sandbox-record.js";
import { templateInfoWithEgress, type SnapshotManifest } from "../src/snapshots/snapshot-layer.js";

const root = mkdtempSync(join(tmpdir(), "burrow-legacy-egress-"));
const limits = { cpuCount: 1, memoryMB: 256, diskMB: 512, pids: 1024 };

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("egress rules written before proxied", () => {
  it("the reserved deny entries are read as the proxying they stood for, the wider when both", () => {
    expect(upgradeLegacyRules({ allowOut: [], denyOut: ["x.test", "transforms.burrow.invalid"] })).toEqual({ allowOut: [], denyOut: ["x.test"], proxied: "inspect" });
    expect(upgradeLegacyRules({ allowOut: ["1.2.3.4/32"], denyOut: ["transforms.burrow.invalid", "egress-proxy.burrow.invalid"] })).toEqual({
      allowOut: ["1.2.3.4/32"],
      denyOut: [],
      proxied: "tunnel",
    });
    const current = { allowOut: [], denyOut: ["x.test"], proxied: "inspect" as const };
    expect(upgradeLegacyRules(current)).toBe(current);
  });

  it("a sandbox record's reserved deny entry is read as proxied", async () => {
    const dir = join(root, "sbx");
    mkdirSync(dir);
    const egress = { allowOut: ["203.0.113.0/24"], denyOut: ["x.test", "transforms.burrow.invalid"] };
    writeFileSync(join(dir, "sandbox.json"), JSON.stringify({ sandboxId: "sbx", ip: "10.0.0.2", hostVeth: "v", limits, allowInternetAccess: true, egress }));
    expect((await readRecord(dir))?.egress).toEqual({ allowOut: ["203.0.113.0/24"], denyOut: ["x.test"], proxied: "inspect" });
  });

  it("a checkpoint record's is read as proxied, and its children get it", async () => {
    const id = "ckpt";
    mkdirSync(join(root, id));
    const record = {
      format: 1,
      checkpointId: id,
      sandboxId: "sbx",
      parentId: null,
      createdAt: new Date().toISOString(),
      templateId: "tpl",
      layers: ["l1"],
      limits,
      allowInternetAccess: true,
      egress: { allowOut: [], denyOut: ["egress-proxy.burrow.invalid"] },
      files: "files",
      memory: null,
    };
    writeFileSync(join(root, id, "checkpoint.json"), JSON.stringify(record));
    const read = await readCheckpointRecord(root, id);
    expect(read?.egress).toEqual({ allowOut: [], denyOut: [], proxied: "tunnel" });
    expect(checkpointInfo(read!, 0).egress).toEqual({ allowOut: [], denyOut: [], proxied: "tunnel" });
  });

  it("a snapshot manifest's is read as proxied in its TemplateInfo", () => {
    const manifest: SnapshotManifest = {
      templateId: "snap",
      aliases: [],
      layers: ["l1"],
      defaults: limits,
      createdAt: new Date().toISOString(),
      snapshotOf: "sbx",
      egress: { allowInternetAccess: false, allowOut: ["1.2.3.4/32"], denyOut: ["transforms.burrow.invalid", "egress-proxy.burrow.invalid"] },
    };
    expect(templateInfoWithEgress(manifest).egress).toEqual({ allowInternetAccess: false, allowOut: ["1.2.3.4/32"], denyOut: [], proxied: "tunnel" });
  });
});
