// Readers of a connection's first bytes for the egress judge. They must agree with first-bytes.ts, which judges the
// same connections on the proxy path; the one difference is that the TLS reader answers as soon as the server_name
// extension has arrived, since the judge holds the packets (and the client waits) until it answers.
#define _GNU_SOURCE
#include "judge-peek.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const char NOT_TLS[] = "not a TLS ClientHello";

/** A name from the wire: lowercased into out; false when empty, too long or with characters a host name has not. */
static bool copy_name(const uint8_t *s, size_t n, char out[JUDGE_NAME_MAX + 1], const char *extra) {
  if (n > 0 && s[n - 1] == '.') n--;
  if (n == 0 || n > JUDGE_NAME_MAX) return false;
  for (size_t i = 0; i < n; i++) {
    char c = (char)s[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' || (c && strchr(extra, c)))) {
      out[0] = 0; // no half name in the DENIED event
      return false;
    }
    out[i] = c;
  }
  out[n] = 0;
  return true;
}

// A bounds-checked reader of the handshake bytes gathered so far. `have` bytes are there; `total` is where the
// ClientHello ends (0 while its header has not arrived). Reading past what is there but within the ClientHello is
// "more"; past the ClientHello or a structure's own end, malformed.
struct reader {
  const uint8_t *b;
  size_t pos, have, total;
};

enum need { NEED_OK, NEED_MORE, NEED_BAD };

static enum need need(const struct reader *r, size_t n, size_t end) {
  if (r->pos + n > end) return NEED_BAD;
  if (r->pos + n > r->have) return NEED_MORE;
  return NEED_OK;
}

static unsigned u8at(const struct reader *r) { return r->b[r->pos]; }
static unsigned u16at(const struct reader *r) { return (unsigned)r->b[r->pos] << 8 | r->b[r->pos + 1]; }

#define NEED(n, end)                                                                                                   \
  do {                                                                                                                 \
    enum need nd_ = need(&r, (n), (end));                                                                              \
    if (nd_ == NEED_MORE) return PEEK_MORE;                                                                            \
    if (nd_ == NEED_BAD) goto malformed;                                                                               \
  } while (0)

static enum judge_peek client_hello(const uint8_t *hs, size_t have, size_t total, char *name, const char **reason) {
  struct reader r = {.b = hs, .pos = 4, .have = have < total ? have : total, .total = total};
  NEED(2 + 32 + 1, total); // legacy_version, random, legacy_session_id length
  r.pos += 34;
  size_t n = u8at(&r);
  r.pos++;
  NEED(n + 2, total);
  r.pos += n;
  n = u16at(&r); // cipher_suites
  r.pos += 2;
  NEED(n + 1, total);
  r.pos += n;
  n = u8at(&r); // legacy_compression_methods
  r.pos++;
  NEED(n, total);
  r.pos += n;
  if (r.pos == total) goto no_name;
  NEED(2, total);
  size_t ext_end = r.pos + 2 + u16at(&r);
  r.pos += 2;
  if (ext_end > total) goto malformed;
  while (r.pos < ext_end) {
    NEED(4, ext_end);
    unsigned type = u16at(&r);
    r.pos += 2;
    size_t len = u16at(&r);
    r.pos += 2;
    size_t end = r.pos + len;
    if (end > ext_end) goto malformed;
    if (type != 0) {
      // Skipping needs no bytes: an extension that has not arrived whole is passed over by its length.
      r.pos = end;
      if (r.pos > r.have) return PEEK_MORE;
      continue;
    }
    NEED(2, end);
    size_t list_end = r.pos + 2 + u16at(&r);
    r.pos += 2;
    if (list_end > end) goto malformed;
    while (r.pos + 3 <= list_end) {
      NEED(3, list_end);
      unsigned name_type = u8at(&r);
      size_t name_len = (size_t)r.b[r.pos + 1] << 8 | r.b[r.pos + 2];
      r.pos += 3;
      NEED(name_len, list_end);
      if (name_type == 0) {
        if (copy_name(r.b + r.pos, name_len, name, "")) return PEEK_NAME;
        *reason = "malformed server name (SNI)";
        return PEEK_INVALID;
      }
      r.pos += name_len;
    }
    goto no_name;
  }
  if (r.have < total) return PEEK_MORE;
no_name:
  *reason = "no server name (SNI)";
  return PEEK_INVALID;
malformed:
  *reason = NOT_TLS;
  return PEEK_INVALID;
}

enum judge_peek judge_peek_tls(const uint8_t *d, size_t n, char name[JUDGE_NAME_MAX + 1], const char **reason) {
  // The handshake bytes of consecutive handshake records (RFC 8446 §5.1 lets a ClientHello span several), including
  // the part of the last record that has arrived.
  uint8_t *hs = malloc(n > 0 ? n : 1);
  if (!hs) return PEEK_MORE;
  size_t have = 0, total = 0, off = 0;
  enum judge_peek result = PEEK_MORE;
  while (off + 5 <= n) {
    if (d[off] != 22) {
      *reason = NOT_TLS;
      result = PEEK_INVALID;
      goto out;
    }
    size_t len = (size_t)d[off + 3] << 8 | d[off + 4];
    if (len == 0 || len > 16384 + 2048) {
      *reason = NOT_TLS;
      result = PEEK_INVALID;
      goto out;
    }
    size_t avail = n - off - 5 < len ? n - off - 5 : len;
    memcpy(hs + have, d + off + 5, avail);
    have += avail;
    off += 5 + len;
    if (total == 0 && have >= 4) {
      if (hs[0] != 1) {
        *reason = NOT_TLS;
        result = PEEK_INVALID;
        goto out;
      }
      total = 4 + ((size_t)hs[1] << 16 | (size_t)hs[2] << 8 | hs[3]);
    }
    if (total != 0 && have >= total) break;
  }
  if (total != 0) result = client_hello(hs, have, total, name, reason);
out:
  free(hs);
  return result;
}

static bool http_space(uint8_t c) { return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0; }

/** `METHOD target HTTP/1.0|1.1` (first-bytes.ts: /^[A-Z]+ \S+ HTTP\/1\.[01]$/). */
static bool request_line(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n && s[i] >= 'A' && s[i] <= 'Z') i++;
  if (i == 0 || i >= n || s[i] != ' ') return false;
  size_t target = ++i;
  while (i < n && !http_space(s[i])) i++;
  if (i == target || n - i != 9 || s[i] != ' ') return false;
  return memcmp(s + i + 1, "HTTP/1.", 7) == 0 && (s[n - 1] == '0' || s[n - 1] == '1');
}

enum judge_peek judge_peek_http(const uint8_t *d, size_t n, char name[JUDGE_NAME_MAX + 1], const char **reason) {
  const uint8_t *end = memmem(d, n, "\r\n\r\n", 4);
  if (!end) {
    if (n <= JUDGE_HTTP_HEAD_MAX) return PEEK_MORE;
    *reason = "request head too long";
    return PEEK_INVALID;
  }
  const uint8_t *line = d, *head_end = end;
  const uint8_t *host = NULL, *host_end = NULL;
  size_t hosts = 0;
  for (bool first = true;; first = false) {
    const uint8_t *eol = memmem(line, (size_t)(head_end - line), "\r\n", 2);
    if (!eol) eol = head_end;
    size_t len = (size_t)(eol - line);
    if (first) {
      if (!request_line(line, len)) {
        *reason = "not an HTTP/1 request";
        return PEEK_INVALID;
      }
    } else if (len >= 5 && strncasecmp((const char *)line, "host:", 5) == 0) {
      hosts++;
      host = line + 5;
      host_end = eol;
    }
    if (eol == head_end) break;
    line = eol + 2;
  }
  // Two Host headers are a classic way to make a proxy and a server disagree.
  if (hosts != 1) {
    *reason = hosts == 0 ? "no Host header" : "more than one Host header";
    return PEEK_INVALID;
  }
  while (host < host_end && http_space(*host)) host++;
  while (host_end > host && http_space(host_end[-1])) host_end--;
  size_t len = (size_t)(host_end - host);
  if (len > 0 && host[0] == '[') {
    const uint8_t *close = memchr(host, ']', len);
    len = close ? (size_t)(close - host) + 1 : 0;
  } else {
    size_t i = len;
    while (i > 0 && host[i - 1] >= '0' && host[i - 1] <= '9') i--;
    if (i < len && i > 0 && host[i - 1] == ':') len = i - 1;
  }
  // A fully qualified "example.com." is the table's "example.com" (copy_name drops the dot).
  if (len == 0 || len > JUDGE_NAME_MAX || !copy_name(host, len, name, "[]:")) {
    *reason = "malformed Host header";
    return PEEK_INVALID;
  }
  return PEEK_NAME;
}
