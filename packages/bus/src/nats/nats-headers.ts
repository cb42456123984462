import { headers as natsHeaders, type MsgHdrs } from "@nats-io/transport-node";

const EMPTY: Readonly<Record<string, string>> = Object.freeze({});

export function toNatsHeaders(h: Readonly<Record<string, string>>, msgId?: string): MsgHdrs | undefined {
  let out: MsgHdrs | undefined;
  for (const k in h) {
    out ??= natsHeaders();
    out.set(k, h[k]!);
  }
  if (msgId !== undefined) {
    out ??= natsHeaders();
    out.set("Nats-Msg-Id", msgId);
  }
  return out;
}

/** NATS headers as the bus shows them: lower-case names, first value of each. */
export function fromNatsHeaders(h: MsgHdrs | undefined): Readonly<Record<string, string>> {
  if (!h) return EMPTY;
  const out: Record<string, string> = {};
  for (const k of h.keys()) out[k.toLowerCase()] = h.get(k);
  return out;
}
