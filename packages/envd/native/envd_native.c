// Minimal N-API addon for what Node lacks and envd needs: extended attributes (file metadata is stored as
// user.e2b.* xattrs) and inotify (WatchDir needs CREATE/WRITE/REMOVE/RENAME/CHMOD, which fs.watch cannot tell
// apart). Kept in C with no dependencies so it compiles against the Node headers alone, offline.
#define _GNU_SOURCE
#include <node_api.h>
#include <uv.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/xattr.h>

#define PATH_MAX_LEN 4096

static napi_value throw_errno(napi_env env, const char* syscall, int err) {
  napi_value msg, code, error, sys;
  char buf[256];
  snprintf(buf, sizeof buf, "%s: %s", syscall, strerror(err));
  napi_create_string_utf8(env, buf, NAPI_AUTO_LENGTH, &msg);
  const char* name = "EIO";
  switch (err) {
    case ENOENT: name = "ENOENT"; break; case EACCES: name = "EACCES"; break; case EPERM: name = "EPERM"; break;
    case ENOTSUP: name = "ENOTSUP"; break; case ENOSPC: name = "ENOSPC"; break; case EDQUOT: name = "EDQUOT"; break;
    case ERANGE: name = "ERANGE"; break; case E2BIG: name = "E2BIG"; break; case ENOTDIR: name = "ENOTDIR"; break;
    case EMFILE: name = "EMFILE"; break; case ENOMEM: name = "ENOMEM"; break; case EINVAL: name = "EINVAL"; break;
    case ENODATA: name = "ENODATA"; break; case ELOOP: name = "ELOOP"; break; case ENAMETOOLONG: name = "ENAMETOOLONG"; break;
  }
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_error(env, code, msg, &error);
  napi_set_named_property(env, error, "code", code);
  napi_create_string_utf8(env, syscall, NAPI_AUTO_LENGTH, &sys);
  napi_set_named_property(env, error, "syscall", sys);
  napi_throw(env, error);
  return NULL;
}

static int get_string(napi_env env, napi_value v, char* buf, size_t len) {
  size_t got;
  if (napi_get_value_string_utf8(env, v, buf, len, &got) != napi_ok) return -1;
  if (got >= len - 1) return -1;
  if (strlen(buf) != got) return -1; // embedded NUL
  return 0;
}

// listXattrs(path): string[]   (follows symlinks, like stat)
static napi_value list_xattrs(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1]; char path[PATH_MAX_LEN];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || get_string(env, argv[0], path, sizeof path)) { napi_throw_type_error(env, NULL, "bad path"); return NULL; }
  ssize_t n = listxattr(path, NULL, 0);
  if (n < 0) return throw_errno(env, "listxattr", errno);
  char* names = malloc(n + 1);
  n = listxattr(path, names, n);
  if (n < 0) { int e = errno; free(names); return throw_errno(env, "listxattr", e); }
  napi_value arr; napi_create_array(env, &arr);
  uint32_t idx = 0;
  for (ssize_t off = 0; off < n;) {
    size_t l = strlen(names + off);
    napi_value s; napi_create_string_utf8(env, names + off, l, &s);
    napi_set_element(env, arr, idx++, s);
    off += l + 1;
  }
  free(names);
  return arr;
}

// getXattr(path, name): Buffer | null
static napi_value get_xattr(napi_env env, napi_callback_info info) {
  size_t argc = 2; napi_value argv[2]; char path[PATH_MAX_LEN], name[256];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || get_string(env, argv[0], path, sizeof path) || get_string(env, argv[1], name, sizeof name)) {
    napi_throw_type_error(env, NULL, "bad arguments"); return NULL;
  }
  ssize_t n = getxattr(path, name, NULL, 0);
  if (n < 0) {
    if (errno == ENODATA) { napi_value nul; napi_get_null(env, &nul); return nul; }
    return throw_errno(env, "getxattr", errno);
  }
  void* data; napi_value buf;
  napi_create_buffer(env, n, &data, &buf);
  if (n > 0 && getxattr(path, name, data, n) < 0) return throw_errno(env, "getxattr", errno);
  return buf;
}

// setXattr(path, name, value: Buffer|string)
static napi_value set_xattr(napi_env env, napi_callback_info info) {
  size_t argc = 3; napi_value argv[3]; char path[PATH_MAX_LEN], name[256];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 3 || get_string(env, argv[0], path, sizeof path) || get_string(env, argv[1], name, sizeof name)) {
    napi_throw_type_error(env, NULL, "bad arguments"); return NULL;
  }
  void* data; size_t len;
  if (napi_get_buffer_info(env, argv[2], &data, &len) != napi_ok) { napi_throw_type_error(env, NULL, "value must be a Buffer"); return NULL; }
  if (setxattr(path, name, data, len, 0) < 0) return throw_errno(env, "setxattr", errno);
  return NULL;
}

// removeXattr(path, name)
static napi_value remove_xattr(napi_env env, napi_callback_info info) {
  size_t argc = 2; napi_value argv[2]; char path[PATH_MAX_LEN], name[256];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 2 || get_string(env, argv[0], path, sizeof path) || get_string(env, argv[1], name, sizeof name)) {
    napi_throw_type_error(env, NULL, "bad arguments"); return NULL;
  }
  if (removexattr(path, name) < 0 && errno != ENODATA) return throw_errno(env, "removexattr", errno);
  return NULL;
}

// ---- inotify -------------------------------------------------------------------------------------------
// A watcher has two owners: the libuv poll handle (done when uv_close's callback runs) and the JS external that
// wraps it (done when the GC finalizes it). Either can finish first: an explicit close ends the handle long
// before the external is collected, and at env teardown the finalizer may come first. The memory is freed by
// whichever owner finishes last, never before.
typedef struct {
  uv_poll_t poll;
  int fd;
  napi_env env;
  napi_ref callback;
  napi_async_context ctx;
  int closed;         // stop_watcher ran: fd closed, callback released, handle closing
  int handle_live;    // libuv still owns the poll handle
  int external_live;  // the JS external has not been finalized
} watcher_t;

static void release_watcher_if_unowned(watcher_t* w) {
  if (!w->handle_live && !w->external_live) free(w);
}

static void on_handle_closed(uv_handle_t* h) {
  watcher_t* w = h->data;
  w->handle_live = 0;
  release_watcher_if_unowned(w);
}

// Closes the inotify fd, releases the JS callback and starts closing the poll handle. Idempotent.
static void stop_watcher(napi_env env, watcher_t* w) {
  if (w->closed) return;
  w->closed = 1;
  napi_delete_reference(env, w->callback);
  napi_async_destroy(env, w->ctx);
  uv_poll_stop(&w->poll);
  close(w->fd);
  uv_close((uv_handle_t*)&w->poll, on_handle_closed);
}

static void on_readable(uv_poll_t* handle, int status, int events) {
  watcher_t* w = handle->data;
  (void)events;
  if (status < 0 || w->closed) return;
  char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
  napi_handle_scope scope;
  napi_open_handle_scope(w->env, &scope);
  napi_value arr; napi_create_array(w->env, &arr);
  uint32_t idx = 0;
  for (;;) {
    ssize_t n = read(w->fd, buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      struct inotify_event* ev = (struct inotify_event*)p;
      napi_value o, v;
      napi_create_object(w->env, &o);
      napi_create_int32(w->env, ev->wd, &v); napi_set_named_property(w->env, o, "wd", v);
      napi_create_uint32(w->env, ev->mask, &v); napi_set_named_property(w->env, o, "mask", v);
      napi_create_uint32(w->env, ev->cookie, &v); napi_set_named_property(w->env, o, "cookie", v);
      napi_create_string_utf8(w->env, ev->len ? ev->name : "", NAPI_AUTO_LENGTH, &v);
      napi_set_named_property(w->env, o, "name", v);
      napi_set_element(w->env, arr, idx++, o);
      p += sizeof(struct inotify_event) + ev->len;
    }
  }
  if (idx > 0) {
    napi_value cb, global, result;
    napi_get_reference_value(w->env, w->callback, &cb);
    napi_get_global(w->env, &global);
    napi_make_callback(w->env, w->ctx, global, cb, 1, &arr, &result);
  }
  napi_close_handle_scope(w->env, scope);
}

static void finalize_watcher(napi_env env, void* data, void* hint) {
  (void)hint;
  watcher_t* w = data;
  stop_watcher(env, w);
  w->external_live = 0;
  release_watcher_if_unowned(w);
}

// inotifyOpen(callback(events)): external handle
static napi_value inotify_open(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return throw_errno(env, "inotify_init1", errno);
  watcher_t* w = calloc(1, sizeof *w);
  w->fd = fd; w->env = env; w->handle_live = 1; w->external_live = 1;
  napi_create_reference(env, argv[0], 1, &w->callback);
  napi_value name; napi_create_string_utf8(env, "envd:inotify", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, NULL, name, &w->ctx);
  uv_loop_t* loop; napi_get_uv_event_loop(env, &loop);
  uv_poll_init(loop, &w->poll, fd);
  w->poll.data = w;
  uv_poll_start(&w->poll, UV_READABLE, on_readable);
  napi_value ext; napi_create_external(env, w, finalize_watcher, NULL, &ext);
  return ext;
}

static watcher_t* get_watcher(napi_env env, napi_value v) {
  void* p = NULL;
  if (napi_get_value_external(env, v, &p) != napi_ok) return NULL;
  watcher_t* w = p;
  return w->closed ? NULL : w;
}

// inotifyAddWatch(handle, path, mask): wd
static napi_value inotify_add(napi_env env, napi_callback_info info) {
  size_t argc = 3; napi_value argv[3]; char path[PATH_MAX_LEN]; uint32_t mask;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  watcher_t* w = argc == 3 ? get_watcher(env, argv[0]) : NULL;
  if (!w || get_string(env, argv[1], path, sizeof path) || napi_get_value_uint32(env, argv[2], &mask) != napi_ok) {
    napi_throw_type_error(env, NULL, "bad arguments"); return NULL;
  }
  int wd = inotify_add_watch(w->fd, path, mask);
  if (wd < 0) return throw_errno(env, "inotify_add_watch", errno);
  napi_value r; napi_create_int32(env, wd, &r); return r;
}

// inotifyRmWatch(handle, wd)
static napi_value inotify_rm(napi_env env, napi_callback_info info) {
  size_t argc = 2; napi_value argv[2]; int32_t wd;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  watcher_t* w = argc == 2 ? get_watcher(env, argv[0]) : NULL;
  if (w && napi_get_value_int32(env, argv[1], &wd) == napi_ok) inotify_rm_watch(w->fd, wd);
  return NULL;
}

// inotifyClose(handle)
static napi_value inotify_close(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  watcher_t* w = argc == 1 ? get_watcher(env, argv[0]) : NULL;
  if (w) stop_watcher(env, w);
  return NULL;
}

// scrubInitialEnv(name): zeroes the NAME=value entry in the process's initial environment block (what
// /proc/<pid>/environ shows). unsetenv only drops the pointer; the bytes stay readable by sandbox root otherwise.
static napi_value scrub_initial_env(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1]; char name[256];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 1 || get_string(env, argv[0], name, sizeof name)) { napi_throw_type_error(env, NULL, "bad name"); return NULL; }
  FILE* f = fopen("/proc/self/stat", "r");
  if (!f) return throw_errno(env, "open /proc/self/stat", errno);
  char buf[4096]; size_t n = fread(buf, 1, sizeof buf - 1, f); fclose(f); buf[n] = 0;
  char* p = strrchr(buf, ')'); // comm may contain spaces; fields restart after the last ')'
  unsigned long env_start = 0, env_end = 0;
  int field = 2;
  for (char* tok = p ? strtok(p + 1, " ") : NULL; tok; tok = strtok(NULL, " ")) {
    field++;
    if (field == 50) env_start = strtoul(tok, NULL, 10);
    if (field == 51) { env_end = strtoul(tok, NULL, 10); break; }
  }
  napi_value result; uint32_t scrubbed = 0;
  if (env_start && env_end > env_start) {
    size_t len = strlen(name);
    for (char* s = (char*)env_start; s < (char*)env_end;) {
      size_t l = strnlen(s, (char*)env_end - s);
      if (l > len && strncmp(s, name, len) == 0 && s[len] == '=') { memset(s, 0, l); scrubbed++; }
      s += l + 1;
    }
  }
  napi_create_uint32(env, scrubbed, &result);
  return result;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"listXattrs", NULL, list_xattrs, NULL, NULL, NULL, napi_default, NULL},
    {"getXattr", NULL, get_xattr, NULL, NULL, NULL, napi_default, NULL},
    {"setXattr", NULL, set_xattr, NULL, NULL, NULL, napi_default, NULL},
    {"removeXattr", NULL, remove_xattr, NULL, NULL, NULL, napi_default, NULL},
    {"inotifyOpen", NULL, inotify_open, NULL, NULL, NULL, napi_default, NULL},
    {"inotifyAddWatch", NULL, inotify_add, NULL, NULL, NULL, napi_default, NULL},
    {"inotifyRmWatch", NULL, inotify_rm, NULL, NULL, NULL, napi_default, NULL},
    {"inotifyClose", NULL, inotify_close, NULL, NULL, NULL, napi_default, NULL},
    {"scrubInitialEnv", NULL, scrub_initial_env, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
