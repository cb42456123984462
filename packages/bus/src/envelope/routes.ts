import { createHash } from "node:crypto";
import { encodeToken } from "../subject.js";
import type { Route } from "./seal.js";

/** The stream that keeps agent messages until each receiver has acknowledged them. */
export const AGENT_STREAM = "BURROW_AGENT_MSGS";
export const AGENT_SUBJECTS = ["agent.*.inbox", "bcast.>", "group.>"];

export function inboxSubject(agentId: string): string {
  return `agent.${encodeToken(agentId)}.inbox`;
}

export function routeSubject(route: Route): string {
  switch (route.type) {
    case "direct":
      return inboxSubject(route.to);
    case "broadcast":
      return `bcast.${encodeToken(route.topic)}`;
    case "multicast":
      return `group.${encodeToken(route.group)}.${encodeToken(route.topic ?? "all")}`;
  }
}

/** A durable name from arbitrary parts: readable when it fits, hashed when it does not. */
export function durableName(...parts: string[]): string {
  const plain = parts.join("_");
  if (/^[A-Za-z0-9_-]{1,64}$/.test(plain)) return plain;
  const h = createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 24);
  return `${plain.replace(/[^A-Za-z0-9_-]/g, "").slice(0, 39)}_${h}`;
}
