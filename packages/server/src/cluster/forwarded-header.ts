// The header a node adds to what it forwards to another node. The receiving node answers such a request itself and
// never forwards it again, so two nodes that disagree about an owner for a moment cannot bounce a request between
// them. A client setting it gains nothing: it only keeps the request on the node it reached.
export const FORWARDED_HEADER = "x-burrow-forwarded-by";

export function isForwarded(headers: { [name: string]: unknown }): boolean {
  return headers[FORWARDED_HEADER] !== undefined;
}
