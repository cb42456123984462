// N-API binding of the egress judge (judge.c), on the relay's addon (addon.c's init calls judge_register), loaded by
// src/egress/egress-judge.ts:
//   judgeStart(queue, onEvent) -> handle             bind NFQUEUE `queue` and NFLOG group `queue` in this process's
//                                                    network namespace
//   judgeAllow(handle, saddr, daddr, name, ttlMs)     saddr may reach daddr under name (dotted IPv4 strings)
//   judgeForget(handle, saddr)                        drop every entry of a sandbox address
//   judgeDecide(handle, flow, allow) -> boolean       answer an ASK; false when the flow no longer waits
//   judgeHolding(handle) -> number                    connections being judged
//   judgeStop(handle)                                 deny what is held, unbind, join the thread
// onEvent(kind, flow, saddr, sport, daddr, dport, name, reason, bytesOut, bytesIn) runs on the JS thread through a
// thread-safe function that does not keep the event loop alive. Errors: Error with code `E<errno>`.
#define NAPI_VERSION 8
#include <node_api.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge.h"
#include "judge-peek.h"

napi_value judge_register(napi_env env, napi_value exports);

// First, so a relay handle (addon.c's struct, which starts with a pointer) passed by mistake is told apart.
#define JUDGE_MAGIC 0x4a554447u

struct binding {
  uint32_t magic;
  napi_threadsafe_function tsfn;
  struct judge *judge;
  bool stopped;
};

struct report {
  struct judge_event ev;
  char name[JUDGE_NAME_MAX + 1];
  char reason[96];
};

static napi_value throw_code(napi_env env, int err, const char *msg) {
  char code[24];
  snprintf(code, sizeof code, "E%d", err);
  napi_throw_error(env, code, msg);
  return NULL;
}

// Judge thread: copy the event (its strings live only during the call) and queue it for the JS thread.
static void on_event(void *ctx, const struct judge_event *ev) {
  struct binding *b = ctx;
  struct report *r = malloc(sizeof *r);
  if (!r) return;
  r->ev = *ev;
  snprintf(r->name, sizeof r->name, "%s", ev->name ? ev->name : "");
  snprintf(r->reason, sizeof r->reason, "%s", ev->reason ? ev->reason : "");
  if (napi_call_threadsafe_function(b->tsfn, r, napi_tsfn_nonblocking) != napi_ok) free(r);
}

static napi_value ip_string(napi_env env, uint32_t addr) {
  char s[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &addr, s, sizeof s);
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

static void call_js(napi_env env, napi_value cb, void *context, void *data) {
  (void)context;
  struct report *r = data;
  if (env && cb) {
    napi_value argv[10], undefined;
    napi_create_int32(env, (int32_t)r->ev.kind, &argv[0]);
    napi_create_double(env, (double)r->ev.flow, &argv[1]);
    argv[2] = ip_string(env, r->ev.saddr);
    napi_create_uint32(env, r->ev.sport, &argv[3]);
    argv[4] = ip_string(env, r->ev.daddr);
    napi_create_uint32(env, r->ev.dport, &argv[5]);
    napi_create_string_utf8(env, r->name, NAPI_AUTO_LENGTH, &argv[6]);
    napi_create_string_utf8(env, r->reason, NAPI_AUTO_LENGTH, &argv[7]);
    napi_create_double(env, (double)r->ev.bytes_out, &argv[8]);
    napi_create_double(env, (double)r->ev.bytes_in, &argv[9]);
    napi_get_undefined(env, &undefined);
    napi_call_function(env, undefined, cb, 10, argv, NULL);
  }
  free(r);
}

static void binding_stop(struct binding *b) {
  if (b->stopped) return;
  b->stopped = true;
  judge_stop(b->judge); // its last events are queued before it returns
  b->judge = NULL;
  napi_release_threadsafe_function(b->tsfn, napi_tsfn_release);
}

static void cleanup_hook(void *arg) { binding_stop(arg); }

static void finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  struct binding *b = data;
  if (!b->stopped) {
    napi_remove_env_cleanup_hook(env, cleanup_hook, b);
    binding_stop(b);
  }
  free(b);
}

/** The judge of a handle argument, or NULL with a JS exception pending. */
static struct binding *unwrap(napi_env env, napi_value v) {
  void *data = NULL;
  if (napi_get_value_external(env, v, &data) != napi_ok || data == NULL || ((struct binding *)data)->magic != JUDGE_MAGIC) {
    napi_throw_type_error(env, NULL, "not a judge handle");
    return NULL;
  }
  return data;
}

/** The running judge of a handle argument, or NULL with a JS exception pending. */
static struct binding *running(napi_env env, napi_value v, const char *what) {
  struct binding *b = unwrap(env, v);
  if (!b) return NULL;
  if (b->stopped) {
    char msg[64];
    snprintf(msg, sizeof msg, "%s: the judge is stopped", what);
    throw_code(env, ESHUTDOWN, msg);
    return NULL;
  }
  return b;
}

static bool get_ip(napi_env env, napi_value v, uint32_t *addr) {
  char s[INET_ADDRSTRLEN + 1];
  size_t len = 0;
  if (napi_get_value_string_utf8(env, v, s, sizeof s, &len) != napi_ok || len >= INET_ADDRSTRLEN) return false;
  struct in_addr a;
  if (inet_pton(AF_INET, s, &a) != 1) return false;
  *addr = a.s_addr;
  return true;
}

static napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], name, handle;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t queue;
  napi_valuetype t = napi_undefined;
  if (argc > 1) napi_typeof(env, argv[1], &t);
  if (argc < 2 || napi_get_value_uint32(env, argv[0], &queue) != napi_ok || queue > 65535 || t != napi_function) {
    napi_throw_type_error(env, NULL, "judgeStart(queue: 0..65535, onEvent: function)");
    return NULL;
  }
  struct binding *b = calloc(1, sizeof *b);
  if (!b) return throw_code(env, ENOMEM, "judgeStart: out of memory");
  b->magic = JUDGE_MAGIC;
  napi_create_string_utf8(env, "burrow-judge", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[1], NULL, name, 0, 1, NULL, NULL, NULL, call_js, &b->tsfn) != napi_ok) {
    free(b);
    napi_throw_error(env, NULL, "judgeStart: napi_create_threadsafe_function failed");
    return NULL;
  }
  napi_unref_threadsafe_function(env, b->tsfn);
  int err = 0;
  b->judge = judge_start((uint16_t)queue, on_event, b, &err);
  if (!b->judge) {
    napi_release_threadsafe_function(b->tsfn, napi_tsfn_abort);
    free(b);
    char msg[200];
    snprintf(msg, sizeof msg, "judgeStart: cannot read NFQUEUE %u and NFLOG group %u: %s%s", queue, queue, strerror(err),
             err == EBUSY ? " (another socket holds the queue or the group)" : "");
    return throw_code(env, err, msg);
  }
  napi_add_env_cleanup_hook(env, cleanup_hook, b);
  if (napi_create_external(env, b, finalize, NULL, &handle) != napi_ok) {
    napi_remove_env_cleanup_hook(env, cleanup_hook, b);
    binding_stop(b);
    free(b);
    napi_throw_error(env, NULL, "judgeStart: napi_create_external failed");
    return NULL;
  }
  return handle;
}

static napi_value allow(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 5) {
    napi_throw_type_error(env, NULL, "judgeAllow(handle, saddr, daddr, name, ttlMs)");
    return NULL;
  }
  struct binding *b = running(env, argv[0], "judgeAllow");
  if (!b) return NULL;
  uint32_t saddr, daddr, ttl;
  char name[JUDGE_NAME_MAX + 2];
  size_t len = 0;
  if (!get_ip(env, argv[1], &saddr) || !get_ip(env, argv[2], &daddr) ||
      napi_get_value_string_utf8(env, argv[3], name, sizeof name, &len) != napi_ok || len == 0 || len > JUDGE_NAME_MAX ||
      napi_get_value_uint32(env, argv[4], &ttl) != napi_ok) {
    napi_throw_type_error(env, NULL, "judgeAllow(handle, saddr: IPv4, daddr: IPv4, name: 1..255 chars, ttlMs: number)");
    return NULL;
  }
  int r = judge_allow(b->judge, saddr, daddr, name, ttl);
  if (r < 0) return throw_code(env, -r, "judgeAllow: out of memory");
  return NULL;
}

static napi_value forget(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  struct binding *b = argc > 0 ? running(env, argv[0], "judgeForget") : NULL;
  if (!b) return NULL;
  uint32_t saddr;
  if (argc < 2 || !get_ip(env, argv[1], &saddr)) {
    napi_throw_type_error(env, NULL, "judgeForget(handle, saddr: IPv4)");
    return NULL;
  }
  judge_forget(b->judge, saddr);
  return NULL;
}

static napi_value decide(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], out;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  struct binding *b = argc > 0 ? running(env, argv[0], "judgeDecide") : NULL;
  if (!b) return NULL;
  double flow;
  bool yes;
  if (argc < 3 || napi_get_value_double(env, argv[1], &flow) != napi_ok || flow < 0 ||
      napi_get_value_bool(env, argv[2], &yes) != napi_ok) {
    napi_throw_type_error(env, NULL, "judgeDecide(handle, flow: number, allow: boolean)");
    return NULL;
  }
  napi_get_boolean(env, judge_decide(b->judge, (uint64_t)flow, yes) == 0, &out);
  return out;
}

static napi_value holding(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  struct binding *b = argc > 0 ? unwrap(env, argv[0]) : NULL;
  if (!b) return NULL;
  napi_create_double(env, b->stopped ? 0 : (double)judge_holding(b->judge), &out);
  return out;
}

static napi_value stop(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  struct binding *b = argc > 0 ? unwrap(env, argv[0]) : NULL;
  if (!b) return NULL;
  if (!b->stopped) {
    napi_remove_env_cleanup_hook(env, cleanup_hook, b);
    binding_stop(b);
  }
  return NULL;
}

napi_value judge_register(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"judgeStart", NULL, start, NULL, NULL, NULL, napi_default, NULL},
      {"judgeAllow", NULL, allow, NULL, NULL, NULL, napi_default, NULL},
      {"judgeForget", NULL, forget, NULL, NULL, NULL, napi_default, NULL},
      {"judgeDecide", NULL, decide, NULL, NULL, NULL, napi_default, NULL},
      {"judgeHolding", NULL, holding, NULL, NULL, NULL, napi_default, NULL},
      {"judgeStop", NULL, stop, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}
