// N-API binding of the splice relay engine (relay.c), loaded by src/egress/native-relay.ts:
//   create(onDone(id, aToB, bToA, errno)) -> handle   start an engine (its own thread)
//   add(handle, id, fdA, fdB, headToB?, headToA?)     hand over two connected sockets (dup'ed; close yours after)
//   active(handle) -> number                          pairs being relayed
//   stop(handle)                                      close every pair (reported with ECANCELED) and join the thread
//   originalDestination(fd) -> [ip, port] | undefined where a DNAT'ed IPv4 connection was going (SO_ORIGINAL_DST)
//   readNow(fd, max) -> Buffer | undefined            what a socket has received already, without waiting
// onDone runs on the JS thread (a thread-safe function that does not keep the event loop alive). Compiled with the
// system compiler against the running Node's headers (native/build.sh), no node-gyp.
#define NAPI_VERSION 8
#include <node_api.h>

#include <arpa/inet.h>
#include <errno.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay.h"

struct binding {
  napi_threadsafe_function tsfn;
  struct relay_engine *engine;
  bool stopped;
};

struct report {
  uint64_t id, a_to_b, b_to_a;
  int err;
};

static napi_value throw_errno(napi_env env, const char *what, int err) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  char code[24];
  snprintf(code, sizeof code, "E%d", err);
  napi_throw_error(env, code, msg);
  return NULL;
}

// Worker thread: queue the report for the JS thread (an unbounded queue, so this never blocks the relay).
static void on_done(void *ctx, uint64_t id, uint64_t a_to_b, uint64_t b_to_a, int err) {
  struct binding *b = ctx;
  struct report *r = malloc(sizeof *r);
  if (!r) return;
  *r = (struct report){.id = id, .a_to_b = a_to_b, .b_to_a = b_to_a, .err = err};
  if (napi_call_threadsafe_function(b->tsfn, r, napi_tsfn_nonblocking) != napi_ok) free(r);
}

static void call_js(napi_env env, napi_value cb, void *context, void *data) {
  (void)context;
  struct report *r = data;
  if (env && cb) {
    napi_value argv[4], undefined;
    napi_create_double(env, (double)r->id, &argv[0]);
    napi_create_double(env, (double)r->a_to_b, &argv[1]);
    napi_create_double(env, (double)r->b_to_a, &argv[2]);
    napi_create_int32(env, r->err, &argv[3]);
    napi_get_undefined(env, &undefined);
    napi_call_function(env, undefined, cb, 4, argv, NULL);
  }
  free(r);
}

static void binding_stop(struct binding *b) {
  if (b->stopped) return;
  b->stopped = true;
  relay_engine_stop(b->engine); // its last reports are queued before it returns
  b->engine = NULL;
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

static struct binding *unwrap(napi_env env, napi_value v) {
  void *data = NULL;
  if (napi_get_value_external(env, v, &data) != napi_ok || data == NULL) {
    napi_throw_type_error(env, NULL, "not a relay handle");
    return NULL;
  }
  return data;
}

static napi_value create(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], name, handle;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_valuetype t;
  if (argc < 1 || napi_typeof(env, argv[0], &t) != napi_ok || t != napi_function) {
    napi_throw_type_error(env, NULL, "create(onDone): onDone must be a function");
    return NULL;
  }
  struct binding *b = calloc(1, sizeof *b);
  if (!b) return throw_errno(env, "create", ENOMEM);
  napi_create_string_utf8(env, "burrow-relay", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, argv[0], NULL, name, 0, 1, NULL, NULL, NULL, call_js, &b->tsfn) != napi_ok) {
    free(b);
    napi_throw_error(env, NULL, "create: napi_create_threadsafe_function failed");
    return NULL;
  }
  napi_unref_threadsafe_function(env, b->tsfn);
  int err = 0;
  b->engine = relay_engine_start(on_done, b, &err);
  if (!b->engine) {
    napi_release_threadsafe_function(b->tsfn, napi_tsfn_abort);
    free(b);
    return throw_errno(env, "create", err);
  }
  napi_add_env_cleanup_hook(env, cleanup_hook, b);
  if (napi_create_external(env, b, finalize, NULL, &handle) != napi_ok) {
    napi_remove_env_cleanup_hook(env, cleanup_hook, b);
    binding_stop(b);
    free(b);
    napi_throw_error(env, NULL, "create: napi_create_external failed");
    return NULL;
  }
  return handle;
}

/** A Buffer argument (or undefined/null: none). */
static int get_head(napi_env env, napi_value v, void **data, size_t *len) {
  napi_valuetype t;
  napi_typeof(env, v, &t);
  *data = NULL;
  *len = 0;
  if (t == napi_undefined || t == napi_null) return 0;
  bool is_buffer = false;
  napi_is_buffer(env, v, &is_buffer);
  if (!is_buffer) return -1;
  return napi_get_buffer_info(env, v, data, len) == napi_ok ? 0 : -1;
}

static napi_value add(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 4) {
    napi_throw_type_error(env, NULL, "add(handle, id, fdA, fdB, headToB?, headToA?)");
    return NULL;
  }
  struct binding *b = unwrap(env, argv[0]);
  if (!b) return NULL;
  if (b->stopped) return throw_errno(env, "add", ESHUTDOWN);
  double id;
  int32_t fd_a, fd_b;
  void *to_b = NULL, *to_a = NULL;
  size_t to_b_len = 0, to_a_len = 0;
  if (napi_get_value_double(env, argv[1], &id) != napi_ok || napi_get_value_int32(env, argv[2], &fd_a) != napi_ok ||
      napi_get_value_int32(env, argv[3], &fd_b) != napi_ok || fd_a < 0 || fd_b < 0 ||
      (argc > 4 && get_head(env, argv[4], &to_b, &to_b_len)) || (argc > 5 && get_head(env, argv[5], &to_a, &to_a_len))) {
    napi_throw_type_error(env, NULL, "add(handle, id, fdA, fdB, headToB?, headToA?): bad arguments");
    return NULL;
  }
  int r = relay_engine_add(b->engine, (uint64_t)id, fd_a, fd_b, to_b, to_b_len, to_a, to_a_len);
  if (r < 0) return throw_errno(env, "add", -r);
  return NULL;
}

static napi_value active(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  struct binding *b = argc > 0 ? unwrap(env, argv[0]) : NULL;
  if (!b) return NULL;
  napi_create_double(env, b->stopped ? 0 : (double)relay_engine_active(b->engine), &out);
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

// Node has no SO_ORIGINAL_DST; conntrack's procfs table has it too, but reading it costs a file of every tracked
// connection, too slow for the egress proxy's accept path. Undefined when the connection was not NAT'ed (or not IPv4).
static napi_value original_destination(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out, ip_v, port_v, undefined;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_get_undefined(env, &undefined);
  int32_t fd;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_type_error(env, NULL, "originalDestination(fd)");
    return NULL;
  }
  struct sockaddr_in dst;
  socklen_t len = sizeof dst;
  if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) < 0 || dst.sin_family != AF_INET) return undefined;
  char ip[INET_ADDRSTRLEN];
  if (!inet_ntop(AF_INET, &dst.sin_addr, ip, sizeof ip)) return undefined;
  napi_create_array_with_length(env, 2, &out);
  napi_create_string_utf8(env, ip, NAPI_AUTO_LENGTH, &ip_v);
  napi_create_uint32(env, ntohs(dst.sin_port), &port_v);
  napi_set_element(env, out, 0, ip_v);
  napi_set_element(env, out, 1, port_v);
  return out;
}

// The egress proxy reads a new connection's first bytes in its accept callback: on a loaded host they are usually
// there already, and Node would read them only in the event loop's next turn. Non-blocking; undefined when nothing
// is there (EAGAIN), at EOF or on an error (Node then reads the end itself).
static napi_value read_now(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], out, undefined;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_get_undefined(env, &undefined);
  int32_t fd, max;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int32(env, argv[1], &max) != napi_ok || fd < 0 ||
      max <= 0) {
    napi_throw_type_error(env, NULL, "readNow(fd, max)");
    return NULL;
  }
  void *buf = malloc((size_t)max);
  if (!buf) return throw_errno(env, "readNow", ENOMEM);
  ssize_t n = recv(fd, buf, (size_t)max, MSG_DONTWAIT);
  if (n <= 0 || napi_create_buffer_copy(env, (size_t)n, buf, NULL, &out) != napi_ok) out = undefined;
  free(buf);
  return out;
}

napi_value judge_register(napi_env env, napi_value exports); // judge-addon.c: the egress judge, on the same addon

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"create", NULL, create, NULL, NULL, NULL, napi_default, NULL},
      {"add", NULL, add, NULL, NULL, NULL, napi_default, NULL},
      {"active", NULL, active, NULL, NULL, NULL, napi_default, NULL},
      {"stop", NULL, stop, NULL, NULL, NULL, napi_default, NULL},
      {"originalDestination", NULL, original_destination, NULL, NULL, NULL, napi_default, NULL},
      {"readNow", NULL, read_now, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return judge_register(env, exports);
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
