/* The sandbox child: becomes root of its user namespace, builds its root filesystem, locks
 * itself down (capabilities, seccomp, optional no_new_privs), execs the command and turns into
 * the sandbox's pid 1. Every failure goes back to the launcher as a message. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

static void send_msg(int fd, const struct msg *m) {
  ssize_t n;
  do n = write(fd, m, sizeof *m);
  while (n < 0 && errno == EINTR);
}

static void fail(int to_parent, const struct msg *m) __attribute__((noreturn));
static void fail(int to_parent, const struct msg *m) {
  send_msg(to_parent, m);
  /* Take the command (if it started) down with us; pid 1 exiting kills the namespace. */
  _exit(1);
}

/* Keep fds 0-2 and the listed ones, close everything else. */
static void close_other_fds(int *keep, int n) {
  for (int i = 1; i < n; i++) /* insertion sort: n is tiny */
    for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
      int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  unsigned next = 3;
  for (int i = 0; i < n; i++) {
    if (keep[i] < (int)next) continue;
    if ((unsigned)keep[i] > next) close_range(next, (unsigned)keep[i] - 1, 0);
    next = (unsigned)keep[i] + 1;
  }
  close_range(next, ~0U, 0);
}

static int setup_stdio(int log_fd, struct msg *m) {
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return msg_error(m, "stdio", "open /dev/null"), -1;
  if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) return msg_error(m, "stdio", "dup2"), -1;
  close(null_fd);
  close(log_fd);
  return 0;
}

static void hide_cmdline(struct config *cfg) {
  size_t n = 0;
  while (cfg->argv[n]) n++;
  char **argv = calloc(n + 1, sizeof *argv);
  char **env = calloc(MAX_ENV + 2, sizeof *env);
  if (!argv || !env) return; /* keep the original names rather than fail the sandbox */
  for (size_t i = 0; i < n; i++) argv[i] = strdup(cfg->argv[i]);
  for (size_t i = 0; cfg->env[i]; i++) env[i] = strdup(cfg->env[i]);
  cfg->argv = argv;
  memcpy(cfg->env, env, sizeof cfg->env);
  free(env);
  if (g_arg_start && g_arg_end > g_arg_start) {
    memset(g_arg_start, 0, (size_t)(g_arg_end - g_arg_start));
    snprintf(g_arg_start, (size_t)(g_arg_end - g_arg_start), "burrow-init");
  }
}

void sandbox_child(const struct config *cfg_in, int from_parent, int to_parent, int log_fd) {
  struct config own = *cfg_in;
  struct config *cfg = &own;
  struct msg m;
  memset(&m, 0, sizeof m);
  char c;
  /* Signals for the init are consumed with sigtimedwait; block them before anyone can send one,
   * since pid 1 silently drops unhandled signals. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigprocmask(SIG_BLOCK, &set, NULL);

  /* Holding the lease registry's lock any longer would stall other launchers. */
  if (cfg->owner_lock_fd >= 0) close(cfg->owner_lock_fd);
  if (read(from_parent, &c, 1) != 1) _exit(1); /* launcher died before writing our id maps */

  /* The id map alone does not change credentials: become uid/gid 0 of the namespace (host
   * --uid-base, or the sandbox's own range) and drop the supplementary groups of host root. */
  if (setgroups(0, NULL) || setresgid(0, 0, 0) || setresuid(0, 0, 0)) {
    msg_error(&m, "credentials", "setresuid/setresgid to namespace root");
    fail(to_parent, &m);
  }
  /* Our cwd is the overlay, moved by the kernel into this mount namespace's copy of it. */
  cfg->merged_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (cfg->merged_fd < 0) {
    msg_error(&m, "rootfs", "open %s", cfg->merged);
    fail(to_parent, &m);
  }
  if (write_userns_limits(cfg, &m)) fail(to_parent, &m);
  /* After the credential change, which clears it: until the commit, a dying launcher kills us. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (setsid() < 0) {
    msg_error(&m, "setsid", "setsid");
    fail(to_parent, &m);
  }
  if (setup_stdio(log_fd, &m)) fail(to_parent, &m);
  int keep[4 + MAX_VOLUMES] = {from_parent, to_parent, cfg->merged_fd, cfg->runtime_tree};
  for (int i = 0; i < cfg->n_volumes; i++) keep[4 + i] = cfg->volume_tree[i];
  close_other_fds(keep, 4 + cfg->n_volumes);
  umask(022);

  if (setup_rootfs(cfg, &m)) fail(to_parent, &m);
  if (sethostname(cfg->hostname, strlen(cfg->hostname))) {
    msg_error(&m, "hostname", "sethostname");
    fail(to_parent, &m);
  }
  if (loopback_up(&m)) fail(to_parent, &m);
  if (drop_capabilities(&m)) fail(to_parent, &m);
  if (cfg->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
    msg_error(&m, "no-new-privs", "prctl");
    fail(to_parent, &m);
  }
  /* Loaded while we still hold CAP_SYS_ADMIN in our namespace, so no_new_privs stays optional. */
  if (load_seccomp(&m)) fail(to_parent, &m);
  if (restrict_own_caps(&m)) fail(to_parent, &m);

  /* /proc/1/cmdline is readable inside: replace our argv (host paths of layers, upper, runtime)
   * with a neutral name. The command and environment live in that area, so copy them first. */
  hide_cmdline(cfg);

  pid_t cmd = spawn_command(cfg, &m);
  if (cmd < 0) fail(to_parent, &m);

  m.kind = MSG_OK;
  send_msg(to_parent, &m);
  if (read(from_parent, &c, 1) != 1 || c != 'c') _exit(1);
  prctl(PR_SET_PDEATHSIG, 0);
  m.kind = MSG_ACK;
  send_msg(to_parent, &m);
  close(from_parent);
  close(to_parent);
  run_init(cfg, cmd, 2);
}
