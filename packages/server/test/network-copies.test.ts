// The egress kept with snapshots and checkpoints (network_copies in a real burrow.db): kept across a reopened store,
// and dropped at start once no template or checkpoint has its id; kept when the checkpoint lookup fails. The
// orchestrator's two lookups are plain functions here: what they answer is all pruning asks of it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CheckpointInfo, TemplateInfo } from "@burrow/orchestrator";
import { afterEach, describe, expect, it } from "vitest";
import { pruneNetworkCopies } from "../src/network/network-copies.js";
import { openStore } from "../src/store/store.js";

const dir = mkdtempSync(join(tmpdir(), "burrow-network-copies-"));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("network copies", () => {
  it("are kept across a reopened store and dropped when their snapshot or checkpoint is gone", async () => {
    const egress = { allowOut: [], denyOut: ["x.test"], rules: { "a.test": [{ transform: { headers: { A: "b" } } }] }, rulesOwner: 3, egressProxy: { address: "192.0.2.1:1080", username: "u", password: "p" } };
    let store = openStore(dir);
    for (const id of ["snap-kept", "snap-gone", "ckpt-kept", "ckpt-gone", "ckpt-unsure"]) store.networks.keepCopy(id, egress);
    store.close();
    store = openStore(dir);
    expect(store.networks.copyOf("snap-kept")).toEqual(egress);

    const orchestrator = {
      resolveTemplate: (ref: string) => (ref === "snap-kept" ? ({ templateId: ref } as TemplateInfo) : undefined),
      getCheckpoint: async (id: string) => {
        if (id === "ckpt-unsure") throw new Error("lookup failed");
        return id === "ckpt-kept" ? ({ checkpointId: id } as CheckpointInfo) : undefined;
      },
    };
    expect(await pruneNetworkCopies(orchestrator, store.networks)).toBe(2);
    expect(store.networks.copyIds().sort()).toEqual(["ckpt-kept", "ckpt-unsure", "snap-kept"]);
    expect(store.networks.copyOf("snap-gone")).toBeUndefined();
    store.close();
  });
});
