// The egress judge (judge.c): the direct path's reader of an NFQUEUE. nft sends the packets of a sandbox's direct
// connection (one to an address Burrow's resolver gave it for an allowed name) to the queue until its first payload
// has been judged; the judge reads the TLS SNI or HTTP Host from them, looks the name up in a table the JS side fills
// (judge_allow), asks JS when it is not there, and answers every held packet with a mark that nft turns into a
// conntrack mark, after which the kernel forwards the connection without the queue. It also follows conntrack events
// and asks conntrack for an allowed direct connection's byte counts as it closes, for the audit. The N-API binding is judge-addon.c.
#ifndef BURROW_JUDGE_H
#define BURROW_JUDGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Packet mark bit set by nft on packets of unjudged direct connections (the judge never sets it).
#define JUDGE_MARK_QUEUE 0x10000000u
// Verdict marks: the packet's own mark without JUDGE_MARK_QUEUE, OR'ed with one of these.
#define JUDGE_MARK_ALLOW 0x20000000u
#define JUDGE_MARK_DENY 0x40000000u
// A packet without payload (the handshake's last ACK, pure ACKs while a head is held) passes unjudged.
#define JUDGE_MARK_PASS 0x80000000u
// Conntrack mark bits (set by nft; read here in conntrack events).
#define JUDGE_CT_DIRECT 0x10000000u
#define JUDGE_CT_ALLOWED 0x20000000u
#define JUDGE_CT_DENIED 0x40000000u

enum judge_event_kind {
  JUDGE_ALLOWED = 1, // the name was in the table: the connection goes on
  JUDGE_ASK = 2,     // the name was not: answer with judge_decide(flow, allow) within 5 s
  JUDGE_DENIED = 3,  // reset (reason says why; name when there was one)
  JUDGE_ENDED = 4,   // a direct connection that was allowed is gone from conntrack: its byte counts
};

struct judge_event {
  enum judge_event_kind kind;
  uint64_t flow;               // JUDGE_ASK (and the ALLOWED/DENIED that answer it)
  uint32_t saddr, daddr;       // network order
  uint16_t sport, dport;       // host order
  const char *name;            // "" when none; valid only during the callback
  const char *reason;          // JUDGE_DENIED; "" otherwise
  uint64_t bytes_out, bytes_in; // JUDGE_ENDED: conntrack's original and reply byte counters
};

/** Called on the judge's thread. It must not call back into the judge (the judge's lock is held). */
typedef void (*judge_event_fn)(void *ctx, const struct judge_event *ev);

struct judge;

/**
 * Bind NFQUEUE `queue` (in the calling thread's network namespace) and subscribe to conntrack events; the
 * judge's thread runs until judge_stop. NULL with *err a positive errno (EBUSY: another process holds the queue).
 */
struct judge *judge_start(uint16_t queue, judge_event_fn fn, void *ctx, int *err);

/**
 * saddr may reach daddr (network order) under `name` (lowercase, no trailing dot) for ttl_ms. At most 64 names per
 * pair and 65536 pairs (the oldest dropped). 0, or a negative errno (EINVAL: a bad name). Thread-safe.
 */
int judge_allow(struct judge *j, uint32_t saddr, uint32_t daddr, const char *name, uint32_t ttl_ms);

/** Drop every entry of a sandbox address (the sandbox is gone). Thread-safe. */
void judge_forget(struct judge *j, uint32_t saddr);

/** Answer a JUDGE_ASK. 0, or -ENOENT when that flow is no longer waiting (timed out, or answered). Thread-safe. */
int judge_decide(struct judge *j, uint64_t flow, bool allow);

/** Connections being judged now (their packets held). Thread-safe. */
size_t judge_holding(struct judge *j);

/** Deny every held connection, close the sockets (which unbinds the queue), join the thread, free everything. */
void judge_stop(struct judge *j);

#endif
