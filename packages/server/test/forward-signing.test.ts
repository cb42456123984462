// The forwarded mark (cluster/forwarded-header.ts): only a request signed with the cluster's key over its method,
// path, sender, receiver, a recent time and a nonce not seen before counts as forwarded; anything else has the mark removed from both views of the head
// (the parsed headers and rawHeaders, which the proxy passes on), and a verified signature is removed as well.
import { randomBytes } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { FORWARD_SIGNATURE_HEADER, FORWARDED_HEADER, ForwardSigning, isForwarded, SIGNATURE_WINDOW_MS } from "../src/cluster/forwarded-header.js";
import { deriveForwardKey } from "../src/cluster/forward-secret.js";

const secret = randomBytes(32);
const nodeA = new ForwardSigning(deriveForwardKey(secret), "node-a");
const nodeB = new ForwardSigning(deriveForwardKey(secret), "node-b");
const nodeC = new ForwardSigning(deriveForwardKey(secret), "node-c");
const stranger = new ForwardSigning(deriveForwardKey(randomBytes(32)), "node-a");

/** A request head as node:http parses it (only what admit reads). */
function head(method: string, url: string, headers: Record<string, string>): IncomingMessage {
  const rawHeaders = Object.entries({ host: "b:3000", "x-api-key": "k", ...headers }).flat();
  const parsed = Object.fromEntries(Object.entries({ host: "b:3000", "x-api-key": "k", ...headers }).map(([k, v]) => [k.toLowerCase(), v]));
  return { method, url, headers: parsed, rawHeaders } as unknown as IncomingMessage;
}

const marks = (req: IncomingMessage) => req.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase()).filter((n) => n.startsWith("x-burrow-"));

describe("ForwardSigning", () => {
  it("admits what another node of the cluster signed, keeping the mark and dropping the signature", () => {
    const req = head("POST", "/sandboxes", nodeA.headers("POST", "/sandboxes", "node-b"));
    expect(nodeB.admit(req)).toBe(true);
    expect(isForwarded(req.headers)).toBe(true);
    expect(req.headers[FORWARDED_HEADER]).toBe("node-a");
    expect(req.headers[FORWARD_SIGNATURE_HEADER]).toBeUndefined();
    expect(marks(req)).toEqual([FORWARDED_HEADER]);
  });

  it("signs the path without its query: a list's filters and cursor may differ", () => {
    const req = head("GET", "/v2/sandboxes?limit=1&nextToken=x", nodeA.headers("GET", "/v2/sandboxes", "node-b"));
    expect(nodeB.admit(req)).toBe(true);
  });

  it("strips a client's mark: unsigned, signed by another cluster, for another method, path or sender, stale or malformed", () => {
    const now = Date.now();
    const signed = nodeA.headers("POST", "/sandboxes", "node-b", now);
    const cases: Array<[string, string, Record<string, string>]> = [
      ["unsigned", "/sandboxes", { "X-Burrow-Forwarded-By": "node-a" }],
      ["another cluster's key", "/sandboxes", stranger.headers("POST", "/sandboxes", "node-b")],
      ["another path", "/v2/sandboxes", signed],
      ["another sender named", "/sandboxes", { ...signed, [FORWARDED_HEADER]: "node-c" }],
      ["too old", "/sandboxes", nodeA.headers("POST", "/sandboxes", "node-b", now - SIGNATURE_WINDOW_MS - 1_000)],
      ["from the future", "/sandboxes", nodeA.headers("POST", "/sandboxes", "node-b", now + SIGNATURE_WINDOW_MS + 1_000)],
      ["malformed", "/sandboxes", { [FORWARDED_HEADER]: "node-a", [FORWARD_SIGNATURE_HEADER]: "nonsense" }],
      ["meant for another node", "/sandboxes", nodeA.headers("POST", "/sandboxes", "node-c", now)],
      ["another nonce", "/sandboxes", { ...signed, [FORWARD_SIGNATURE_HEADER]: signed[FORWARD_SIGNATURE_HEADER]!.replace(/\.([0-9a-f])/, (_, c: string) => `.${c === "0" ? "1" : "0"}`) }],
      ["signature alone", "/sandboxes", { [FORWARD_SIGNATURE_HEADER]: signed[FORWARD_SIGNATURE_HEADER]! }],
    ];
    for (const [why, path, headers] of cases) {
      const req = head("POST", path, headers);
      expect(nodeB.admit(req, now), why).toBe(false);
      expect(isForwarded(req.headers), why).toBe(false);
      expect(marks(req), why).toEqual([]);
      expect(req.headers["x-api-key"], why).toBe("k");
    }
    const get = head("GET", "/sandboxes", signed);
    expect(nodeB.admit(get, now), "another method").toBe(false);
  });

  it("marks a request it passes on in both views, replacing a mark it carried", () => {
    const req = head("GET", "/files?path=x", { "X-Burrow-Forwarded-By": "forged" });
    nodeA.mark(req, "node-b");
    expect(req.headers[FORWARDED_HEADER]).toBe("node-a");
    expect(marks(req).sort()).toEqual([FORWARD_SIGNATURE_HEADER, FORWARDED_HEADER].sort());
    const received = head("GET", "/files?path=x", { [FORWARDED_HEADER]: "node-a", [FORWARD_SIGNATURE_HEADER]: req.headers[FORWARD_SIGNATURE_HEADER] as string });
    expect(nodeB.admit(received)).toBe(true);
  });

  it("accepts a signature once: the same headers again, on the node they were for or another, are a client's", () => {
    const now = Date.now();
    const signed = nodeA.headers("POST", "/sandboxes", "node-b", now);
    expect(nodeB.admit(head("POST", "/sandboxes", signed), now)).toBe(true);
    for (const [why, node] of [["replayed to the same node", nodeB], ["replayed to another node", nodeC]] as const) {
      const again = head("POST", "/sandboxes", signed);
      expect(node.admit(again, now + 1_000), why).toBe(false);
      expect(isForwarded(again.headers), why).toBe(false);
      expect(marks(again), why).toEqual([]);
    }
    // Two requests signed alike but for their nonce are two requests.
    expect(nodeB.admit(head("POST", "/sandboxes", nodeA.headers("POST", "/sandboxes", "node-b", now)), now)).toBe(true);
  });

  it("forgets accepted nonces once their signatures are out of the window (memory bounded by time)", () => {
    const start = Date.now();
    const node = new ForwardSigning(deriveForwardKey(secret), "node-d");
    for (let i = 0; i < 100; i++) expect(node.admit(head("GET", "/x", nodeA.headers("GET", "/x", "node-d", start)), start)).toBe(true);
    const later = start + SIGNATURE_WINDOW_MS + 1;
    expect(node.admit(head("GET", "/x", nodeA.headers("GET", "/x", "node-d", later)), later)).toBe(true);
    expect(node.acceptedNonces).toBe(1);
  });
});
