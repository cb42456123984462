/* JSON output of the launcher: exactly one line, either {"pid":N,"owner":U,"uidBase":B} or {"error":"…","step":"…"}. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"

static void write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    buf += n;
    len -= (size_t)n;
  }
}

/* Escape for a JSON string; control bytes become \u00XX so any message is valid JSON. */
static size_t json_escape(char *out, size_t cap, const char *in) {
  size_t o = 0;
  for (; *in && o + 7 < cap; in++) {
    unsigned char c = (unsigned char)*in;
    if (c == '"' || c == '\\') {
      out[o++] = '\\';
      out[o++] = (char)c;
    } else if (c < 0x20) {
      o += (size_t)snprintf(out + o, cap - o, "\\u%04x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  out[o] = 0;
  return o;
}

void report_pid(int fd, pid_t pid, uid_t owner, unsigned long host_base) {
  char buf[96];
  int n = snprintf(buf, sizeof buf, "{\"pid\":%d,\"owner\":%u,\"uidBase\":%lu}\n", (int)pid, (unsigned)owner, host_base);
  write_all(fd, buf, (size_t)n);
}

void report_error(int fd, const char *step, const char *text) {
  char es[64], et[1024], buf[1200];
  json_escape(es, sizeof es, step);
  json_escape(et, sizeof et, text);
  int n = snprintf(buf, sizeof buf, "{\"error\":\"%s\",\"step\":\"%s\"}\n", et, es);
  write_all(fd, buf, (size_t)n);
}

void msg_error(struct msg *m, const char *step, const char *fmt, ...) {
  int saved = errno;
  m->kind = MSG_ERROR;
  snprintf(m->step, sizeof m->step, "%s", step);
  char what[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(m->text, sizeof m->text, "%s: %s", what, strerror(saved));
}
