// The egress judge's engine: one thread, epoll over the NFQUEUE socket, an NFLOG group's socket (the FIN and RST
// packets of allowed direct connections), a socket for conntrack queries and an eventfd (stop, and answers from
// judge_decide), with a 100 ms tick for timeouts. Raw netlink (no libnetfilter_queue:
// four message types, and nothing to install). A connection being judged is a `flow`: its payload gathered in
// sequence order, the ids of its held packets, and the copy of its first held packet's headers that becomes the
// reset when it is denied. A judged flow stays a few seconds as a tombstone, because packets already queued when the
// verdict was given still arrive after it.
#define _GNU_SOURCE
#include "judge.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "judge-peek.h"
#include "judge-table.h"

#define MAX_JUDGING 4096
#define MAX_HELD 64            // packets held per connection (the client retransmits while it waits)
#define NAME_TIMEOUT_MS 10000  // from the first payload to a name
#define ASK_TIMEOUT_MS 5000    // from ASK to judge_decide
#define TOMBSTONE_MS 5000      // a judged flow answers late packets this long
#define TICK_MS 100
// A head that has not grown for this long is let through as it is, while it names nothing yet: a client that writes
// its head in two small writes (Nagle) sends the second only once the first is acknowledged, which holding it
// prevents. What goes through can never be a whole request (see stall_passable).
#define STALL_MS 200
#define FLOW_BUCKETS 4096
#define RECV_BUF (256 * 1024)
#define TOMBSTONE_WINDOW (1u << 20)
#define HEADERS_MAX 120        // IPv4 header with options + TCP header with options

enum flow_state { READING, ASKING, ALLOWED, DENIED };

struct held {
  uint32_t id, mark;
};

struct flow {
  struct flow *hnext, *prev, *next;
  uint32_t saddr, daddr;
  uint16_t sport, dport;
  enum flow_state state;
  int decision; // from judge_decide: 1 allow, 2 deny
  uint64_t id, started, asked, until, touched;
  uint32_t first_seq, next_seq;
  uint8_t *buf;
  size_t len;
  struct held held[MAX_HELD];
  size_t nheld;
  uint8_t headers[HEADERS_MAX];
  size_t headers_len;
  char name[JUDGE_NAME_MAX + 1];
};

/** A connection whose end is to be read from conntrack at `due` (ms). */
struct ct_wait {
  uint32_t saddr, daddr;
  uint16_t sport, dport;
  uint64_t due;
};

#define WAITS_MAX 8192
// A FIN is logged before the other side's answer and the last ACK: the counts are read a moment later.
#define END_QUERY_DELAY_MS 250
// A connection still open then (half-closed, the other side still sending) is asked about again this often.
#define END_QUERY_AGAIN_MS 1000

/** An event kept for the next tick (its strings copied: the flow it names may be gone by then). */
struct pending_event {
  struct judge_event ev;
  char name[JUDGE_NAME_MAX + 1];
  char reason[96];
};

/**
 * Events but ASK go to JS in batches, once per tick: each delivery wakes the server's event loop, and a wake-up per
 * connection took CPU from the connections themselves on a small host (+0.1 ms per short request on 2 vCPUs).
 * An ASK goes at once: the connection waits for its answer.
 */
#define PENDING_MAX 4096

struct judge {
  uint16_t queue;
  int qfd, lfd, cqfd, efd, epfd;
  pthread_t thread;
  judge_event_fn fn;
  void *ctx;
  atomic_bool stopping;
  pthread_mutex_t mu; // everything below
  struct judge_table *table;
  struct flow *buckets[FLOW_BUCKETS];
  struct flow *flows; // every flow, judged ones too
  size_t judging;
  uint64_t next_flow_id;
  uint32_t seq;
  uint8_t *rbuf;
  struct pending_event *pending;
  size_t npending;
  struct ct_wait *waits;
  size_t nwaits;
};

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

// --- netlink --------------------------------------------------------------------------------------------------

struct msg {
  uint8_t buf[512];
  struct nlmsghdr *nh;
};

static void msg_init(struct msg *m, uint16_t type, uint16_t flags, uint32_t seq, uint16_t res_id) {
  memset(m->buf, 0, sizeof m->buf);
  m->nh = (struct nlmsghdr *)m->buf;
  m->nh->nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg));
  m->nh->nlmsg_type = type;
  m->nh->nlmsg_flags = NLM_F_REQUEST | flags;
  m->nh->nlmsg_seq = seq;
  struct nfgenmsg *g = NLMSG_DATA(m->nh);
  g->nfgen_family = AF_UNSPEC;
  g->version = NFNETLINK_V0;
  g->res_id = htons(res_id);
}

static void msg_attr(struct msg *m, uint16_t type, const void *data, size_t len) {
  struct nlattr *a = (struct nlattr *)(m->buf + NLMSG_ALIGN(m->nh->nlmsg_len));
  a->nla_type = type;
  a->nla_len = (uint16_t)(NLA_HDRLEN + len);
  memcpy((uint8_t *)a + NLA_HDRLEN, data, len);
  m->nh->nlmsg_len = NLMSG_ALIGN(m->nh->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static int msg_send(int fd, const struct msg *m) {
  struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
  for (;;) {
    if (sendto(fd, m->buf, m->nh->nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) >= 0) return 0;
    if (errno != EINTR) return -errno;
  }
}

/** Send with NLM_F_ACK set and wait (at most 2 s) for the kernel's answer: 0 or a negative errno. */
static int msg_request(int fd, struct msg *m) {
  int r = msg_send(fd, m);
  if (r < 0) return r;
  uint8_t buf[8192];
  for (int waited = 0; waited < 2000;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int ready = poll(&p, 1, 100);
    if (ready <= 0) {
      waited += 100;
      continue;
    }
    ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR || errno == ENOBUFS) continue;
      return -errno;
    }
    int len = (int)n;
    for (struct nlmsghdr *nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
      if (nh->nlmsg_type == NLMSG_ERROR && nh->nlmsg_seq == m->nh->nlmsg_seq) {
        const struct nlmsgerr *e = NLMSG_DATA(nh);
        return e->error;
      }
    }
  }
  return -ETIMEDOUT;
}

static int netlink_socket(void) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_NETFILTER);
  if (fd < 0) return -errno;
  struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  // Bursts of new connections (queue) or of ending ones (conntrack) must not overflow the socket; where they still
  // do, the queue drops the packets (the client retransmits) and the audit loses the counts of some ends.
  int size = 8 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size) < 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  return fd;
}

static void verdict(struct judge *j, uint32_t id, uint32_t v, uint32_t mark, const void *payload, size_t len) {
  struct msg m;
  msg_init(&m, NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_VERDICT, 0, 0, j->queue);
  struct nfqnl_msg_verdict_hdr vh = {.verdict = htonl(v), .id = htonl(id)};
  msg_attr(&m, NFQA_VERDICT_HDR, &vh, sizeof vh);
  uint32_t mk = htonl(mark);
  msg_attr(&m, NFQA_MARK, &mk, sizeof mk);
  if (payload) msg_attr(&m, NFQA_PAYLOAD, payload, len);
  // A lost verdict leaves the packet in the queue until the socket closes (then it is dropped): fail closed.
  msg_send(j->qfd, &m);
}

static uint32_t judged_mark(uint32_t mark, uint32_t verdict_mark) { return (mark & ~JUDGE_MARK_QUEUE) | verdict_mark; }

// --- flows ----------------------------------------------------------------------------------------------------

static size_t flow_bucket(uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport) {
  uint64_t h = ((uint64_t)saddr << 32 | daddr) ^ ((uint64_t)sport << 16 | dport);
  return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 52) % FLOW_BUCKETS;
}

static struct flow *flow_find(struct judge *j, uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport) {
  for (struct flow *f = j->buckets[flow_bucket(saddr, sport, daddr, dport)]; f; f = f->hnext)
    if (f->saddr == saddr && f->sport == sport && f->daddr == daddr && f->dport == dport) return f;
  return NULL;
}

static struct flow *flow_new(struct judge *j, uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport) {
  struct flow *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->saddr = saddr;
  f->sport = sport;
  f->daddr = daddr;
  f->dport = dport;
  f->id = j->next_flow_id++;
  f->started = now_ms();
  size_t b = flow_bucket(saddr, sport, daddr, dport);
  f->hnext = j->buckets[b];
  j->buckets[b] = f;
  f->next = j->flows;
  if (j->flows) j->flows->prev = f;
  j->flows = f;
  j->judging++;
  return f;
}

static void flow_free(struct judge *j, struct flow *f) {
  struct flow **pp = &j->buckets[flow_bucket(f->saddr, f->sport, f->daddr, f->dport)];
  while (*pp != f) pp = &(*pp)->hnext;
  *pp = f->hnext;
  if (f->prev) f->prev->next = f->next;
  else j->flows = f->next;
  if (f->next) f->next->prev = f->prev;
  if (f->state == READING || f->state == ASKING) j->judging--;
  free(f->buf);
  free(f);
}

/** Hand the pending events to JS (on the judge's thread, the lock held: the callback only queues them). */
static void flush_events(struct judge *j) {
  for (size_t i = 0; i < j->npending; i++) {
    struct pending_event *p = &j->pending[i];
    p->ev.name = p->name;
    p->ev.reason = p->reason;
    j->fn(j->ctx, &p->ev);
  }
  j->npending = 0;
}

static void deliver(struct judge *j, const struct judge_event *ev) {
  if (ev->kind == JUDGE_ASK) {
    j->fn(j->ctx, ev);
    return;
  }
  if (j->npending == PENDING_MAX) flush_events(j);
  struct pending_event *p = &j->pending[j->npending++];
  p->ev = *ev;
  snprintf(p->name, sizeof p->name, "%s", ev->name ? ev->name : "");
  snprintf(p->reason, sizeof p->reason, "%s", ev->reason ? ev->reason : "");
}

static void emit(struct judge *j, const struct flow *f, enum judge_event_kind kind, const char *reason) {
  struct judge_event ev = {.kind = kind, .flow = f->id, .saddr = f->saddr, .daddr = f->daddr, .sport = f->sport,
                           .dport = f->dport, .name = f->name, .reason = reason ? reason : ""};
  deliver(j, &ev);
}

/** Judged: the flow keeps only what answers late packets. */
static void flow_judged(struct judge *j, struct flow *f, enum flow_state state) {
  f->state = state;
  f->until = now_ms() + TOMBSTONE_MS;
  f->nheld = 0;
  free(f->buf);
  f->buf = NULL;
  f->len = 0;
  j->judging--;
}

static void flow_allow(struct judge *j, struct flow *f) {
  for (size_t i = 0; i < f->nheld; i++)
    verdict(j, f->held[i].id, NF_ACCEPT, judged_mark(f->held[i].mark, JUDGE_MARK_ALLOW), NULL, 0);
  emit(j, f, JUDGE_ALLOWED, NULL);
  flow_judged(j, f, ALLOWED);
}

static uint16_t checksum(uint32_t sum, const uint8_t *p, size_t n) {
  for (; n > 1; p += 2, n -= 2) sum += (uint32_t)p[0] << 8 | p[1];
  if (n) sum += (uint32_t)p[0] << 8;
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return (uint16_t)~sum;
}

/**
 * The packet `headers` (IPv4 + TCP, as queued) rewritten in place into a bare RST|ACK with the same addresses, ports,
 * seq and ack: the destination's end takes it as the connection's next segment and closes. Returns its length.
 */
static size_t make_reset(uint8_t *pkt) {
  size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;
  uint8_t *tcp = pkt + ihl;
  size_t total = ihl + 20;
  pkt[2] = (uint8_t)(total >> 8);
  pkt[3] = (uint8_t)total;
  pkt[10] = pkt[11] = 0;
  uint16_t ipsum = checksum(0, pkt, ihl);
  pkt[10] = (uint8_t)(ipsum >> 8);
  pkt[11] = (uint8_t)ipsum;
  tcp[12] = 5 << 4;       // data offset: no options
  tcp[13] = 0x04 | 0x10;  // RST|ACK
  tcp[14] = tcp[15] = 0;  // window
  tcp[16] = tcp[17] = 0;  // checksum
  tcp[18] = tcp[19] = 0;  // urgent pointer
  uint32_t pseudo = 0;
  for (int i = 12; i < 20; i += 2) pseudo += (uint32_t)pkt[i] << 8 | pkt[i + 1]; // saddr, daddr
  pseudo += IPPROTO_TCP + 20;
  uint16_t tsum = checksum(pseudo, tcp, 20);
  tcp[16] = (uint8_t)(tsum >> 8);
  tcp[17] = (uint8_t)tsum;
  return total;
}

static void flow_deny(struct judge *j, struct flow *f, const char *reason) {
  if (f->nheld > 0) {
    size_t len = make_reset(f->headers);
    verdict(j, f->held[0].id, NF_ACCEPT, judged_mark(f->held[0].mark, JUDGE_MARK_DENY), f->headers, len);
    for (size_t i = 1; i < f->nheld; i++) verdict(j, f->held[i].id, NF_DROP, 0, NULL, 0);
  }
  emit(j, f, JUDGE_DENIED, reason);
  flow_judged(j, f, DENIED);
}

static void flow_named(struct judge *j, struct flow *f) {
  if (judge_table_has(j->table, f->saddr, f->daddr, f->name, now_ms())) {
    flow_allow(j, f);
    return;
  }
  f->state = ASKING;
  f->asked = now_ms();
  emit(j, f, JUDGE_ASK, NULL);
}

/** Gather what the packet adds to the flow's first bytes, in sequence order, and read them. */
static void flow_read(struct judge *j, struct flow *f, uint32_t seq, const uint8_t *data, size_t len) {
  size_t cap = f->dport == 443 ? JUDGE_TLS_HELLO_MAX : JUDGE_HTTP_HEAD_MAX + 1;
  int32_t behind = (int32_t)(f->next_seq - seq);
  if (behind < 0) return; // out of order: held, not read; its bytes come again in order
  if ((size_t)behind >= len) return; // a retransmission of bytes already read
  data += behind;
  len -= (size_t)behind;
  if (f->len + len > cap) len = cap - f->len;
  if (len > 0) {
    uint8_t *buf = realloc(f->buf, f->len + len);
    if (!buf) {
      flow_deny(j, f, "out of memory");
      return;
    }
    memcpy(buf + f->len, data, len);
    f->buf = buf;
    f->len += len;
    f->next_seq += (uint32_t)len;
  }
  const char *reason = NULL;
  enum judge_peek r = f->dport == 443 ? judge_peek_tls(f->buf, f->len, f->name, &reason)
                                      : judge_peek_http(f->buf, f->len, f->name, &reason);
  if (r == PEEK_MORE && f->dport == 443 && f->len >= cap) {
    r = PEEK_INVALID;
    reason = "ClientHello too long";
  }
  if (r == PEEK_INVALID) flow_deny(j, f, reason);
  else if (r == PEEK_NAME) flow_named(j, f);
}

/**
 * Whether a flow's held packets may go on before it names anything. A partial ClientHello can do nothing without its
 * rest; a partial HTTP head can do nothing while it has no line ending that a lenient server might take as the end of
 * the head (an empty line of LF or CRLF, which the reader here would have answered on only as CRLF CRLF).
 */
static bool stall_passable(const struct flow *f) {
  if (f->dport == 443) return true;
  return f->buf && !memmem(f->buf, f->len, "\n\n", 2) && !memmem(f->buf, f->len, "\n\r\n", 3);
}

/** Let the held packets go on unjudged (PASS); the flow goes on reading what follows them. */
static void flow_pass(struct judge *j, struct flow *f) {
  for (size_t i = 0; i < f->nheld; i++) verdict(j, f->held[i].id, NF_ACCEPT, judged_mark(f->held[i].mark, JUDGE_MARK_PASS), NULL, 0);
  f->nheld = 0;
}

/** Deny a connection the judge keeps no state for (too many being judged): this packet becomes the reset. */
static void deny_stateless(struct judge *j, uint32_t id, uint32_t mark, const uint8_t *pkt, size_t hlen,
                           uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport, const char *reason) {
  uint8_t headers[HEADERS_MAX];
  memcpy(headers, pkt, hlen);
  size_t len = make_reset(headers);
  verdict(j, id, NF_ACCEPT, judged_mark(mark, JUDGE_MARK_DENY), headers, len);
  struct judge_event ev = {.kind = JUDGE_DENIED, .saddr = saddr, .daddr = daddr, .sport = sport, .dport = dport,
                           .name = "", .reason = reason};
  deliver(j, &ev);
}

static void on_packet(struct judge *j, uint32_t id, uint32_t mark, const uint8_t *pkt, size_t n) {
  // The rules queue only TCP over IPv4; anything else passes as it would without the judge.
  if (n < 20 || pkt[0] >> 4 != 4 || pkt[9] != IPPROTO_TCP) {
    verdict(j, id, NF_ACCEPT, judged_mark(mark, JUDGE_MARK_PASS), NULL, 0);
    return;
  }
  size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;
  size_t total = (size_t)pkt[2] << 8 | pkt[3];
  if (total > n) total = n;
  if (ihl < 20 || total < ihl + 20) {
    verdict(j, id, NF_ACCEPT, judged_mark(mark, JUDGE_MARK_PASS), NULL, 0);
    return;
  }
  const uint8_t *tcp = pkt + ihl;
  size_t doff = (size_t)(tcp[12] >> 4) * 4;
  if (doff < 20 || ihl + doff > total) {
    verdict(j, id, NF_ACCEPT, judged_mark(mark, JUDGE_MARK_PASS), NULL, 0);
    return;
  }
  uint32_t saddr, daddr, seq;
  memcpy(&saddr, pkt + 12, 4);
  memcpy(&daddr, pkt + 16, 4);
  uint16_t sport = (uint16_t)(tcp[0] << 8 | tcp[1]), dport = (uint16_t)(tcp[2] << 8 | tcp[3]);
  seq = (uint32_t)tcp[4] << 24 | (uint32_t)tcp[5] << 16 | (uint32_t)tcp[6] << 8 | tcp[7];
  const uint8_t *data = tcp + doff;
  size_t len = total - ihl - doff;

  struct flow *f = flow_find(j, saddr, sport, daddr, dport);
  // A tombstone answers the rest of its own connection (packets queued before its verdict: at most a congestion
  // window past what was read, since nothing was acknowledged); a new connection on the same ports (after its
  // predecessor's TIME_WAIT) starts at a random sequence number and replaces it. Its DESTROY event removes it too.
  if (f && (f->state == ALLOWED || f->state == DENIED)) {
    if (seq - f->first_seq <= f->next_seq - f->first_seq + TOMBSTONE_WINDOW) {
      if (f->state == ALLOWED) verdict(j, id, NF_ACCEPT, judged_mark(mark, JUDGE_MARK_ALLOW), NULL, 0);
      else verdict(j, id, NF_DROP, 0, NULL, 0);
      return;
    }
    flow_free(j, f);
    f = NULL;
  }
  if (len == 0) {
    verdict(j, id, NF_ACCEPT, judged_mark(mark, JUDGE_MARK_PASS), NULL, 0);
    return;
  }
  if (!f) {
    if (j->judging >= MAX_JUDGING) {
      deny_stateless(j, id, mark, pkt, ihl + doff, saddr, sport, daddr, dport, "too many connections being judged");
      return;
    }
    f = flow_new(j, saddr, sport, daddr, dport);
    if (!f) {
      deny_stateless(j, id, mark, pkt, ihl + doff, saddr, sport, daddr, dport, "out of memory");
      return;
    }
    f->first_seq = f->next_seq = seq;
  }
  if (f->nheld == MAX_HELD) {
    verdict(j, id, NF_DROP, 0, NULL, 0);
    flow_deny(j, f, "too many packets held");
    return;
  }
  if (f->nheld == 0) {
    memcpy(f->headers, pkt, ihl + doff);
    f->headers_len = ihl + doff;
  }
  f->held[f->nheld++] = (struct held){.id = id, .mark = mark};
  f->touched = now_ms();
  if (f->state == READING) flow_read(j, f, seq, data, len);
}

static const struct nlattr *nla_next(const struct nlattr *a, size_t *rem) {
  size_t step = NLA_ALIGN(a->nla_len);
  *rem = step < *rem ? *rem - step : 0;
  return (const struct nlattr *)((const uint8_t *)a + step);
}

static bool nla_ok(const struct nlattr *a, size_t rem) {
  return rem >= sizeof *a && a->nla_len >= sizeof *a && a->nla_len <= rem;
}

static const void *nla_data(const struct nlattr *a) { return (const uint8_t *)a + NLA_HDRLEN; }
static size_t nla_len(const struct nlattr *a) { return a->nla_len - NLA_HDRLEN; }

static void on_queue_message(struct judge *j, const struct nlmsghdr *nh) {
  if (nh->nlmsg_type != (NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_PACKET)) return;
  if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg))) return;
  size_t rem = nh->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct nfgenmsg)));
  const struct nlattr *a = (const struct nlattr *)((const uint8_t *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct nfgenmsg)));
  const struct nfqnl_msg_packet_hdr *ph = NULL;
  uint32_t mark = 0;
  const uint8_t *payload = NULL;
  size_t payload_len = 0;
  for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
    switch (a->nla_type & NLA_TYPE_MASK) {
    case NFQA_PACKET_HDR:
      if (nla_len(a) >= sizeof *ph) ph = nla_data(a);
      break;
    case NFQA_MARK:
      if (nla_len(a) >= 4) {
        memcpy(&mark, nla_data(a), 4);
        mark = ntohl(mark);
      }
      break;
    case NFQA_PAYLOAD:
      payload = nla_data(a);
      payload_len = nla_len(a);
      break;
    }
  }
  if (!ph) return;
  uint32_t id = ntohl(ph->packet_id);
  if (!payload) verdict(j, id, NF_ACCEPT, judged_mark(mark, JUDGE_MARK_PASS), NULL, 0);
  else on_packet(j, id, mark, payload, payload_len);
}

// --- conntrack --------------------------------------------------------------------------------------------------

// The end of an allowed direct connection is reported with its byte counts for the audit. Conntrack's events would
// say when a connection ends, but a listener gets every connection's on the host (UPDATE events cost every short
// connection about 15% of its latency on this VM) and DESTROY comes when the garbage collection gets to the entry,
// up to a minute late. Instead nft logs the FIN and RST packets of allowed direct connections to an NFLOG group
// (the queue's number), and a moment later the judge asks conntrack for the entry, whose answer has the counts.

struct ct_end {
  uint32_t saddr, daddr, mark;
  uint16_t sport, dport;
  uint8_t proto, tcp_state;
  bool has_counters;
  uint64_t bytes_out, bytes_in;
};

/** TCP states of conntrack (linux/netfilter/nf_conntrack_tcp.h) after which nothing more is sent. */
enum { CT_TCP_TIME_WAIT = 7, CT_TCP_CLOSE = 8 };

static uint64_t be64(const void *p) {
  const uint8_t *b = p;
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | b[i];
  return v;
}

static void ct_tuple(const struct nlattr *t, struct ct_end *e) {
  size_t rem = nla_len(t);
  for (const struct nlattr *a = nla_data(t); nla_ok(a, rem); a = nla_next(a, &rem)) {
    size_t rem2 = nla_len(a);
    if ((a->nla_type & NLA_TYPE_MASK) == CTA_TUPLE_IP) {
      for (const struct nlattr *b = nla_data(a); nla_ok(b, rem2); b = nla_next(b, &rem2)) {
        if ((b->nla_type & NLA_TYPE_MASK) == CTA_IP_V4_SRC && nla_len(b) >= 4) memcpy(&e->saddr, nla_data(b), 4);
        if ((b->nla_type & NLA_TYPE_MASK) == CTA_IP_V4_DST && nla_len(b) >= 4) memcpy(&e->daddr, nla_data(b), 4);
      }
    } else if ((a->nla_type & NLA_TYPE_MASK) == CTA_TUPLE_PROTO) {
      for (const struct nlattr *b = nla_data(a); nla_ok(b, rem2); b = nla_next(b, &rem2)) {
        const uint8_t *d = nla_data(b);
        if ((b->nla_type & NLA_TYPE_MASK) == CTA_PROTO_NUM && nla_len(b) >= 1) e->proto = d[0];
        if ((b->nla_type & NLA_TYPE_MASK) == CTA_PROTO_SRC_PORT && nla_len(b) >= 2) e->sport = (uint16_t)(d[0] << 8 | d[1]);
        if ((b->nla_type & NLA_TYPE_MASK) == CTA_PROTO_DST_PORT && nla_len(b) >= 2) e->dport = (uint16_t)(d[0] << 8 | d[1]);
      }
    }
  }
}

static uint8_t ct_tcp_state(const struct nlattr *p) {
  size_t rem = nla_len(p);
  for (const struct nlattr *a = nla_data(p); nla_ok(a, rem); a = nla_next(a, &rem)) {
    if ((a->nla_type & NLA_TYPE_MASK) != CTA_PROTOINFO_TCP) continue;
    size_t rem2 = nla_len(a);
    for (const struct nlattr *b = nla_data(a); nla_ok(b, rem2); b = nla_next(b, &rem2))
      if ((b->nla_type & NLA_TYPE_MASK) == CTA_PROTOINFO_TCP_STATE && nla_len(b) >= 1) return *(const uint8_t *)nla_data(b);
  }
  return 0;
}

static uint64_t ct_bytes(const struct nlattr *c) {
  size_t rem = nla_len(c);
  for (const struct nlattr *a = nla_data(c); nla_ok(a, rem); a = nla_next(a, &rem))
    if ((a->nla_type & NLA_TYPE_MASK) == CTA_COUNTERS_BYTES && nla_len(a) >= 8) return be64(nla_data(a));
  return 0;
}

/** A conntrack message (event or answer) of an IPv4 entry, read; false for anything else. */
static bool ct_read(const struct nlmsghdr *nh, struct ct_end *e) {
  if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg))) return false;
  const struct nfgenmsg *g = NLMSG_DATA(nh);
  if (g->nfgen_family != AF_INET) return false;
  size_t rem = nh->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct nfgenmsg)));
  const struct nlattr *a = (const struct nlattr *)((const uint8_t *)g + NLMSG_ALIGN(sizeof *g));
  for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
    switch (a->nla_type & NLA_TYPE_MASK) {
    case CTA_TUPLE_ORIG:
      ct_tuple(a, e);
      break;
    case CTA_COUNTERS_ORIG:
      e->bytes_out = ct_bytes(a);
      e->has_counters = true;
      break;
    case CTA_COUNTERS_REPLY:
      e->bytes_in = ct_bytes(a);
      break;
    case CTA_PROTOINFO:
      e->tcp_state = ct_tcp_state(a);
      break;
    case CTA_MARK:
      if (nla_len(a) >= 4) {
        memcpy(&e->mark, nla_data(a), 4);
        e->mark = ntohl(e->mark);
      }
      break;
    }
  }
  return e->proto == IPPROTO_TCP;
}

static bool ct_allowed_direct(const struct ct_end *e) {
  return (e->mark & (JUDGE_CT_DIRECT | JUDGE_CT_ALLOWED)) == (JUDGE_CT_DIRECT | JUDGE_CT_ALLOWED);
}

static size_t nest_begin(struct msg *m, uint16_t type) {
  size_t at = NLMSG_ALIGN(m->nh->nlmsg_len);
  struct nlattr *a = (struct nlattr *)(m->buf + at);
  a->nla_type = type | NLA_F_NESTED;
  m->nh->nlmsg_len = (uint32_t)(at + NLA_HDRLEN);
  return at;
}

static void nest_end(struct msg *m, size_t at) {
  struct nlattr *a = (struct nlattr *)(m->buf + at);
  a->nla_len = (uint16_t)(m->nh->nlmsg_len - at);
}

/** Ask for an entry by its original tuple; the answer comes on cqfd (on_ct_answer). */
static void ct_query(struct judge *j, const struct ct_end *e) {
  struct msg m;
  msg_init(&m, NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_GET, 0, ++j->seq, 0);
  ((struct nfgenmsg *)NLMSG_DATA(m.nh))->nfgen_family = AF_INET;
  size_t tuple = nest_begin(&m, CTA_TUPLE_ORIG);
  size_t ip = nest_begin(&m, CTA_TUPLE_IP);
  msg_attr(&m, CTA_IP_V4_SRC, &e->saddr, 4);
  msg_attr(&m, CTA_IP_V4_DST, &e->daddr, 4);
  nest_end(&m, ip);
  size_t proto = nest_begin(&m, CTA_TUPLE_PROTO);
  uint8_t num = IPPROTO_TCP;
  uint16_t sport = htons(e->sport), dport = htons(e->dport);
  msg_attr(&m, CTA_PROTO_NUM, &num, 1);
  msg_attr(&m, CTA_PROTO_SRC_PORT, &sport, 2);
  msg_attr(&m, CTA_PROTO_DST_PORT, &dport, 2);
  nest_end(&m, proto);
  nest_end(&m, tuple);
  // Lost (a full socket): that connection's end goes unaudited, nothing else.
  msg_send(j->cqfd, &m);
}

static void wait_for_end(struct judge *j, uint32_t saddr, uint16_t sport, uint32_t daddr, uint16_t dport, uint64_t due) {
  for (size_t i = 0; i < j->nwaits; i++) {
    const struct ct_wait *w = &j->waits[i];
    if (w->saddr == saddr && w->sport == sport && w->daddr == daddr && w->dport == dport) return;
  }
  if (j->nwaits == WAITS_MAX) memmove(j->waits, j->waits + 1, --j->nwaits * sizeof *j->waits); // the oldest goes
  j->waits[j->nwaits++] = (struct ct_wait){.saddr = saddr, .daddr = daddr, .sport = sport, .dport = dport, .due = due};
}

/** The logged FIN or RST of an allowed direct connection: read its counts a moment later. */
static void on_log_message(struct judge *j, const struct nlmsghdr *nh) {
  if (nh->nlmsg_type != (NFNL_SUBSYS_ULOG << 8 | NFULNL_MSG_PACKET)) return;
  if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg))) return;
  size_t rem = nh->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(struct nfgenmsg)));
  const struct nlattr *a = (const struct nlattr *)((const uint8_t *)NLMSG_DATA(nh) + NLMSG_ALIGN(sizeof(struct nfgenmsg)));
  for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
    if ((a->nla_type & NLA_TYPE_MASK) != NFULA_PAYLOAD) continue;
    const uint8_t *pkt = nla_data(a);
    size_t n = nla_len(a);
    if (n < 20 || pkt[0] >> 4 != 4 || pkt[9] != IPPROTO_TCP) return;
    size_t ihl = (size_t)(pkt[0] & 0x0f) * 4;
    if (ihl < 20 || n < ihl + 4) return;
    uint32_t saddr, daddr;
    memcpy(&saddr, pkt + 12, 4);
    memcpy(&daddr, pkt + 16, 4);
    uint16_t sport = (uint16_t)(pkt[ihl] << 8 | pkt[ihl + 1]), dport = (uint16_t)(pkt[ihl + 2] << 8 | pkt[ihl + 3]);
    // A reset from the destination (the reply direction): the connection is the other way round.
    bool reply = (sport == 80 || sport == 443) && dport != 80 && dport != 443;
    if (reply) wait_for_end(j, daddr, dport, saddr, sport, now_ms() + END_QUERY_DELAY_MS);
    else wait_for_end(j, saddr, sport, daddr, dport, now_ms() + END_QUERY_DELAY_MS);
    return;
  }
}

/** Ask conntrack about the connections whose time has come. */
static void query_due(struct judge *j, uint64_t now) {
  size_t kept = 0;
  for (size_t i = 0; i < j->nwaits; i++) {
    struct ct_wait *w = &j->waits[i];
    if (w->due > now) {
      j->waits[kept++] = *w;
      continue;
    }
    struct ct_end e = {.saddr = w->saddr, .daddr = w->daddr, .sport = w->sport, .dport = w->dport};
    ct_query(j, &e);
  }
  j->nwaits = kept;
}

static void on_ct_answer(struct judge *j, const struct nlmsghdr *nh) {
  struct ct_end e = {0};
  if (nh->nlmsg_type != (NFNL_SUBSYS_CTNETLINK << 8 | IPCTNL_MSG_CT_NEW) || !ct_read(nh, &e)) return;
  if (!ct_allowed_direct(&e) || !e.has_counters) return;
  if (e.tcp_state != CT_TCP_TIME_WAIT && e.tcp_state != CT_TCP_CLOSE) {
    wait_for_end(j, e.saddr, e.sport, e.daddr, e.dport, now_ms() + END_QUERY_AGAIN_MS);
    return;
  }
  // Its tombstone goes with it: a new connection on these ports is judged afresh.
  struct flow *f = flow_find(j, e.saddr, e.sport, e.daddr, e.dport);
  if (f && (f->state == ALLOWED || f->state == DENIED)) flow_free(j, f);
  struct judge_event ev = {.kind = JUDGE_ENDED, .saddr = e.saddr, .daddr = e.daddr, .sport = e.sport, .dport = e.dport,
                           .name = "", .reason = "", .bytes_out = e.bytes_out, .bytes_in = e.bytes_in};
  deliver(j, &ev);
}

// --- the thread -------------------------------------------------------------------------------------------------

static void drain(struct judge *j, int fd, void (*on)(struct judge *, const struct nlmsghdr *)) {
  for (;;) {
    ssize_t n = recv(fd, j->rbuf, RECV_BUF, MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == ENOBUFS) continue; // ENOBUFS: some messages were lost; go on with the rest
      return;
    }
    if (n == 0) return;
    pthread_mutex_lock(&j->mu);
    // int, as NLMSG_NEXT expects: the last message's padding may take `len` below zero, which a size_t would wrap.
    int len = (int)n;
    for (const struct nlmsghdr *nh = (const struct nlmsghdr *)j->rbuf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len))
      on(j, nh);
    pthread_mutex_unlock(&j->mu);
  }
}

static void tick(struct judge *j) {
  uint64_t now = now_ms();
  pthread_mutex_lock(&j->mu);
  for (struct flow *f = j->flows, *next; f; f = next) {
    next = f->next;
    if (f->state == ASKING && f->decision == 1) flow_allow(j, f);
    else if (f->state == ASKING && f->decision == 2) flow_deny(j, f, "not allowed");
    else if (f->state == ASKING && now - f->asked > ASK_TIMEOUT_MS) flow_deny(j, f, "no verdict in time");
    else if (f->state == READING && now - f->started > NAME_TIMEOUT_MS) flow_deny(j, f, "no name in time");
    else if (f->state == READING && f->nheld > 0 && now - f->touched > STALL_MS && stall_passable(f)) flow_pass(j, f);
    else if ((f->state == ALLOWED || f->state == DENIED) && now > f->until) flow_free(j, f);
  }
  query_due(j, now);
  flush_events(j);
  pthread_mutex_unlock(&j->mu);
}

static void *run(void *arg) {
  struct judge *j = arg;
  uint64_t next_tick = now_ms() + TICK_MS;
  while (!atomic_load(&j->stopping)) {
    uint64_t now = now_ms();
    int timeout = next_tick > now ? (int)(next_tick - now) : 0;
    struct epoll_event evs[4];
    int n = epoll_wait(j->epfd, evs, 4, timeout);
    bool queue = false, logged = false, answers = false;
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == j->qfd) queue = true;
      else if (fd == j->lfd) logged = true;
      else if (fd == j->cqfd) answers = true;
      else if (fd == j->efd) {
        uint64_t v;
        if (read(j->efd, &v, sizeof v) < 0) { /* counter already reset */ }
        next_tick = 0; // answers from judge_decide are applied by the tick
      }
    }
    // Ends first: a new connection on the ports of one judged moments ago ended its predecessor's conntrack entry
    // (its SYN did) before it sent a payload, so the predecessor's tombstone is gone before that payload is read.
    if (logged) drain(j, j->lfd, on_log_message);
    if (answers) drain(j, j->cqfd, on_ct_answer);
    if (queue) drain(j, j->qfd, on_queue_message);
    if (now_ms() >= next_tick) {
      tick(j);
      next_tick = now_ms() + TICK_MS;
    }
  }
  pthread_mutex_lock(&j->mu);
  for (struct flow *f = j->flows; f; f = f->next)
    if (f->state == READING || f->state == ASKING) flow_deny(j, f, "judge stopped");
  flush_events(j);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

static void close_all(struct judge *j) {
  if (j->epfd >= 0) close(j->epfd);
  if (j->efd >= 0) close(j->efd);
  if (j->lfd >= 0) close(j->lfd);
  if (j->cqfd >= 0) close(j->cqfd);
  if (j->qfd >= 0) close(j->qfd); // unbinds the queue; what is still queued is dropped
  while (j->flows) flow_free(j, j->flows);
  judge_table_free(j->table);
  pthread_mutex_destroy(&j->mu);
  free(j->rbuf);
  free(j->pending);
  free(j->waits);
  free(j);
}

static int bind_queue(struct judge *j) {
  struct msg m;
  msg_init(&m, NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_CONFIG, NLM_F_ACK, ++j->seq, j->queue);
  struct nfqnl_msg_config_cmd cmd = {.command = NFQNL_CFG_CMD_BIND, .pf = htons(AF_INET)};
  msg_attr(&m, NFQA_CFG_CMD, &cmd, sizeof cmd);
  int r = msg_request(j->qfd, &m);
  // The kernel answers EPERM when another socket holds the queue; the conntrack subscription before this has shown
  // that we have CAP_NET_ADMIN, so that is what it means here.
  if (r == -EPERM) return -EBUSY;
  if (r < 0) return r;
  msg_init(&m, NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_CONFIG, NLM_F_ACK, ++j->seq, j->queue);
  struct nfqnl_msg_config_params params = {.copy_range = htonl(0xffff), .copy_mode = NFQNL_COPY_PACKET};
  msg_attr(&m, NFQA_CFG_PARAMS, &params, sizeof params);
  // Room for a few held packets of every connection being judged (the kernel's default is 1024 packets).
  uint32_t maxlen = htonl(MAX_JUDGING * 4);
  msg_attr(&m, NFQA_CFG_QUEUE_MAXLEN, &maxlen, sizeof maxlen);
  return msg_request(j->qfd, &m);
}

/** Bind NFLOG group `queue` (the same number as the queue), headers only, delivered at most 100 ms late. */
static int bind_log(struct judge *j) {
  struct msg m;
  msg_init(&m, NFNL_SUBSYS_ULOG << 8 | NFULNL_MSG_CONFIG, NLM_F_ACK, ++j->seq, j->queue);
  struct nfulnl_msg_config_cmd cmd = {.command = NFULNL_CFG_CMD_BIND};
  msg_attr(&m, NFULA_CFG_CMD, &cmd, sizeof cmd);
  int r = msg_request(j->lfd, &m);
  if (r == -EPERM || r == -EBUSY) return -EBUSY; // another socket holds the group
  if (r < 0) return r;
  msg_init(&m, NFNL_SUBSYS_ULOG << 8 | NFULNL_MSG_CONFIG, NLM_F_ACK, ++j->seq, j->queue);
  struct nfulnl_msg_config_mode mode = {.copy_range = htonl(120), .copy_mode = NFULNL_COPY_PACKET};
  msg_attr(&m, NFULA_CFG_MODE, &mode, sizeof mode);
  uint32_t timeout = htonl(10), qthresh = htonl(64); // 1/100 s; packets per message batch
  msg_attr(&m, NFULA_CFG_TIMEOUT, &timeout, sizeof timeout);
  msg_attr(&m, NFULA_CFG_QTHRESH, &qthresh, sizeof qthresh);
  return msg_request(j->lfd, &m);
}

struct judge *judge_start(uint16_t queue, judge_event_fn fn, void *ctx, int *err) {
  struct judge *j = calloc(1, sizeof *j);
  if (!j) {
    *err = ENOMEM;
    return NULL;
  }
  j->queue = queue;
  j->fn = fn;
  j->ctx = ctx;
  j->qfd = j->lfd = j->cqfd = j->efd = j->epfd = -1;
  j->next_flow_id = 1;
  pthread_mutex_init(&j->mu, NULL);
  j->table = judge_table_new();
  j->rbuf = malloc(RECV_BUF);
  j->pending = malloc(PENDING_MAX * sizeof *j->pending);
  j->waits = malloc(WAITS_MAX * sizeof *j->waits);
  int r = 0;
  if (!j->table || !j->rbuf || !j->pending || !j->waits) {
    r = -ENOMEM;
    goto fail;
  }
  int fd = netlink_socket();
  if ((r = fd) < 0) goto fail;
  j->cqfd = fd;
  fd = netlink_socket();
  if ((r = fd) < 0) goto fail;
  j->qfd = fd;
  if ((r = bind_queue(j)) < 0) goto fail;
  fd = netlink_socket();
  if ((r = fd) < 0) goto fail;
  j->lfd = fd;
  if ((r = bind_log(j)) < 0) goto fail;
  j->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  j->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (j->efd < 0 || j->epfd < 0) {
    r = -errno;
    goto fail;
  }
  int fds[] = {j->qfd, j->lfd, j->cqfd, j->efd};
  for (size_t i = 0; i < 4; i++) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fds[i]};
    if (epoll_ctl(j->epfd, EPOLL_CTL_ADD, fds[i], &ev) < 0) {
      r = -errno;
      goto fail;
    }
  }
  if ((r = -pthread_create(&j->thread, NULL, run, j)) < 0) goto fail;
  return j;
fail:
  *err = -r;
  close_all(j);
  return NULL;
}

int judge_allow(struct judge *j, uint32_t saddr, uint32_t daddr, const char *name, uint32_t ttl_ms) {
  size_t len = strlen(name);
  if (len == 0 || len > JUDGE_NAME_MAX) return -EINVAL;
  pthread_mutex_lock(&j->mu);
  int r = judge_table_allow(j->table, saddr, daddr, name, now_ms() + ttl_ms);
  pthread_mutex_unlock(&j->mu);
  return r;
}

void judge_forget(struct judge *j, uint32_t saddr) {
  pthread_mutex_lock(&j->mu);
  judge_table_forget(j->table, saddr);
  pthread_mutex_unlock(&j->mu);
}

int judge_decide(struct judge *j, uint64_t flow, bool allow) {
  int r = -ENOENT;
  pthread_mutex_lock(&j->mu);
  for (struct flow *f = j->flows; f; f = f->next)
    if (f->id == flow) {
      if (f->state == ASKING && f->decision == 0) {
        f->decision = allow ? 1 : 2;
        r = 0;
      }
      break;
    }
  pthread_mutex_unlock(&j->mu);
  if (r == 0) {
    uint64_t one = 1;
    if (write(j->efd, &one, sizeof one) < 0) { /* the next tick applies it */ }
  }
  return r;
}

size_t judge_holding(struct judge *j) {
  pthread_mutex_lock(&j->mu);
  size_t n = j->judging;
  pthread_mutex_unlock(&j->mu);
  return n;
}

void judge_stop(struct judge *j) {
  atomic_store(&j->stopping, true);
  uint64_t one = 1;
  if (write(j->efd, &one, sizeof one) < 0) { /* the thread sees `stopping` at its next tick */ }
  pthread_join(j->thread, NULL);
  close_all(j);
}
