// The quota hold a placed create hands over (cluster/quota-hold.ts) is honoured only on a request another node
// forwarded (its signed mark already verified by the forwarder, which strips a client's): a client's header naming a
// hold is removed unread, so it cannot make a node take over (and so drop) another create's hold.
import { describe, expect, it } from "vitest";
import { QUOTA_HOLD_HEADER, takeHandedHold } from "../src/cluster/quota-hold.js";
import { FORWARDED_HEADER } from "../src/cluster/forwarded-header.js";

describe("takeHandedHold", () => {
  it("takes the hold of a forwarded request, and removes the header either way", () => {
    const forwarded: Record<string, string | string[] | undefined> = { [FORWARDED_HEADER]: "node-a", [QUOTA_HOLD_HEADER]: "0a1b2c" };
    expect(takeHandedHold(forwarded)).toBe("0a1b2c");
    expect(forwarded[QUOTA_HOLD_HEADER]).toBeUndefined();

    const client: Record<string, string | string[] | undefined> = { [QUOTA_HOLD_HEADER]: "0a1b2c" };
    expect(takeHandedHold(client)).toBeUndefined();
    expect(client[QUOTA_HOLD_HEADER]).toBeUndefined();
  });

  it("ignores what is no hold id: repeated headers, other characters", () => {
    for (const value of [["0a", "1b"], "../x", "", "ZZ"]) {
      expect(takeHandedHold({ [FORWARDED_HEADER]: "node-a", [QUOTA_HOLD_HEADER]: value })).toBeUndefined();
    }
  });
});
