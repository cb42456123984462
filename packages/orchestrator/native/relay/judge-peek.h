// The egress judge's readers of a connection's first bytes (judge-peek.c): the server_name of a TLS ClientHello and
// the Host of an HTTP/1 request head, the same rules as src/egress/first-bytes.ts (peekTlsServerName, peekHttpHost).
#ifndef BURROW_JUDGE_PEEK_H
#define BURROW_JUDGE_PEEK_H

#include <stddef.h>
#include <stdint.h>

#define JUDGE_NAME_MAX 255
// The most an HTTP client may send before its head ends, and a TLS client before its server name is read.
#define JUDGE_HTTP_HEAD_MAX (16 * 1024)
#define JUDGE_TLS_HELLO_MAX (64 * 1024)

enum judge_peek {
  PEEK_MORE,    // not enough bytes yet
  PEEK_NAME,    // name[] holds the name (lowercase, no port, no trailing dot)
  PEEK_INVALID, // *reason says why
};

/** The SNI of the TLS records in d[0..n) (a ClientHello that may not have arrived whole). */
enum judge_peek judge_peek_tls(const uint8_t *d, size_t n, char name[JUDGE_NAME_MAX + 1], const char **reason);

/** The Host of the HTTP/1 request head in d[0..n). */
enum judge_peek judge_peek_http(const uint8_t *d, size_t n, char name[JUDGE_NAME_MAX + 1], const char **reason);

#endif
