/* burrow-sandbox: the launcher. Runs as host root, mounts the overlay in a mount namespace of
 * its own (so the host never sees it), clones the sandbox init into fresh namespaces as the
 * sandbox's own unprivileged owner uid (owner.c), writes its id maps as root again, waits until
 * the sandbox is fully set up and its command exec'd, prints {"pid":N,"owner":U} and exits. The
 * init is reparented and outlives whoever ran the launcher. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"

#define CLONE_FLAGS (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP)

static int out_fd = 1;
char *g_arg_start, *g_arg_end;

void die(const char *step, const char *fmt, ...) {
  int saved = errno;
  char what[512], text[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(text, sizeof text, "%s: %s", what, strerror(saved));
  report_error(out_fd, step, text);
  exit(1);
}

static int write_file(const char *path, const char *data) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t len = (ssize_t)strlen(data);
  ssize_t n = write(fd, data, (size_t)len);
  int saved = errno;
  close(fd);
  errno = saved;
  return n == len ? 0 : -1;
}

static void join_cgroups(const struct config *cfg) {
  char path[4096], pid[32];
  snprintf(pid, sizeof pid, "%d\n", (int)getpid());
  for (int i = 0; i < cfg->n_cgroups; i++) {
    /* A directory, or (tolerated) its cgroup.procs / v1 tasks file itself. */
    const char *base = strrchr(cfg->cgroups[i], '/');
    base = base ? base + 1 : cfg->cgroups[i];
    if (strcmp(base, "cgroup.procs") == 0 || strcmp(base, "tasks") == 0) snprintf(path, sizeof path, "%s", cfg->cgroups[i]);
    else snprintf(path, sizeof path, "%s/cgroup.procs", cfg->cgroups[i]);
    if (write_file(path, pid)) die("cgroup", "join %s", cfg->cgroups[i]);
  }
}

/* The upper's root directory is the sandbox's "/": it must belong to sandbox root, or root inside
 * sees "/" as owned by nobody. A freshly created upper is owned by host root, so shift it. */
void own_upper(const struct config *cfg) {
  struct stat st;
  if (stat(cfg->upper, &st)) die("upper", "stat %s", cfg->upper);
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    die("upper", "%s", cfg->upper);
  }
  if (st.st_uid < cfg->uid_base || st.st_uid >= cfg->uid_base + cfg->uid_count)
    if (chown(cfg->upper, (uid_t)cfg->uid_base, (gid_t)cfg->uid_base)) die("upper", "chown %s", cfg->upper);
}

/* Mount fds mount_overlay made (idmapped copies, their namespace); closed once the overlay holds
 * its own references, so the sandbox child does not inherit them. */
static int held[MAX_LOWER + 4];
static int n_held;

static int hold(int fd) { return held[n_held++] = fd; }

/* With per-sandbox ranges every layer is an idmapped detached copy, named to overlayfs by its
 * /proc/self/fd path; upper and work are reached through one idmapped copy of their parent
 * directory, since overlayfs wants both on one mount. */
static const char *layer(char *buf, size_t len, int userns, const char *path) {
  if (userns < 0) return path;
  int tree = idmapped_tree(AT_FDCWD, path, userns);
  if (tree < 0) die("overlay", "idmapped mount of %s", path);
  snprintf(buf, len, "/proc/self/fd/%d", hold(tree));
  return buf;
}

static const char *under(char *buf, size_t len, int parent, const char *path) {
  int fd = openat(parent, strrchr(path, '/') + 1, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) die("overlay", "open %s", path);
  snprintf(buf, len, "/proc/self/fd/%d", hold(fd));
  return buf;
}

void mount_overlay(const struct config *cfg) {
  int userns = -1;
  char upper_buf[32], work_buf[32], lower_buf[32];
  const char *upper = cfg->upper, *work = cfg->work;
  if (cfg->ranges_base) {
    userns = idmap_userns(cfg);
    if (userns < 0) die("idmap", "user namespace for the idmapped layers");
    hold(userns);
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(cfg->upper, '/') - cfg->upper), cfg->upper);
    int parent = idmapped_tree(AT_FDCWD, dir[0] ? dir : "/", userns);
    if (parent < 0) die("overlay", "idmapped mount of %s", dir);
    hold(parent);
    upper = under(upper_buf, sizeof upper_buf, parent, cfg->upper);
    work = under(work_buf, sizeof work_buf, parent, cfg->work);
  }
  char opts[4096];
  size_t o = 0;
  o += (size_t)snprintf(opts + o, sizeof opts - o, "lowerdir=");
  for (int i = 0; i < cfg->n_lower && o < sizeof opts; i++)
    o += (size_t)snprintf(opts + o, sizeof opts - o, "%s%s", i ? ":" : "", layer(lower_buf, sizeof lower_buf, userns, cfg->lower[i]));
  if (o < sizeof opts) o += (size_t)snprintf(opts + o, sizeof opts - o, ",upperdir=%s,workdir=%s", upper, work);
  if (o >= sizeof opts - 1) {
    errno = E2BIG;
    die("overlay", "overlay options exceed one page (too many or too long --lower paths)");
  }
  /* nodev: a template layer could carry device nodes (mknod by a build step run as host root);
   * the sandbox must not be able to open them. suid stays: the base template's sudo needs it. */
  if (mount("overlay", cfg->merged, "overlay", MS_NODEV, opts)) die("overlay", "mount overlay on %s", cfg->merged);
  while (n_held > 0) close(held[--n_held]);
}

/* The runtime as a detached, recursively read-only, nosuid, nodev copy; the child attaches it at
 * /.burrow. Made here because the child's credentials may not reach it (a 0700 state dir). */
static int runtime_tree(const struct config *cfg) {
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, cfg->runtime, OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC);
  if (tree < 0) die("runtime", "open_tree %s", cfg->runtime);
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr))
    die("runtime", "make %s read-only", cfg->runtime);
  return tree;
}

/* Only the effective ids change: the real and saved ids stay 0, so the launcher can come back to
 * root right after the clone, and the kernel does not treat the new namespace's creator as a
 * process subject to RLIMIT_NPROC. The capabilities the euid change clears are put back: the
 * owner of a namespace is its creator's euid whatever its capabilities, and a creator without
 * CAP_SYS_ADMIN is what LSMs that confine unprivileged user namespaces (Ubuntu's AppArmor
 * restriction) act on. */
static int become(uid_t id) {
  if (id == 0) return seteuid(0) || setegid(0) ? -1 : 0;
  if (setegid(id) || seteuid(id)) return -1;
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct caps[2];
  if (syscall(SYS_capget, &hdr, caps)) return -1;
  caps[0].effective = caps[0].permitted;
  caps[1].effective = caps[1].permitted;
  return (int)syscall(SYS_capset, &hdr, caps);
}

static void kill_child(pid_t pid) {
  kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

static int read_msg(int fd, struct msg *m) {
  ssize_t n;
  do n = read(fd, m, sizeof *m);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof *m ? 0 : -1;
}

int main(int argc, char **argv) {
  /* Nothing the caller leaked to us may reach the sandbox. */
  close_range(3, ~0U, 0);
  if (argc > 1 && strcmp(argv[1], "--attach-volumes") == 0) return attach_main(argc, argv);
  if (argc > 1 && strcmp(argv[1], "--swap-root") == 0) return swap_main(argc, argv);
  g_arg_start = argv[0];
  g_arg_end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
  struct config cfg;
  char err[512];
  if (parse_args(argc, argv, &cfg, err, sizeof err)) {
    report_error(out_fd, "args", err);
    return 2;
  }
  int log_fd = open(cfg.log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0640);
  if (log_fd < 0) die("log", "open %s", cfg.log_path);

  join_cgroups(&cfg);
  read_host_limits(&cfg);
  if (unshare(CLONE_NEWNS)) die("unshare", "private mount namespace");
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) die("unshare", "make / private");
  own_upper(&cfg);
  /* The lease comes first: with per-sandbox ranges, the owner's slot decides the sandbox's ids,
   * which the overlay's idmapped layers need. */
  const char *what = "";
  if (owner_lease(&cfg, &what)) die("owner", "%s", what);
  cfg.host_base = cfg.ranges_base ? cfg.ranges_base + (cfg.owner - cfg.owner_base) * cfg.uid_count : cfg.uid_base;
  mount_overlay(&cfg);
  cfg.runtime_tree = runtime_tree(&cfg);
  char vwhat[600];
  if (volume_trees(&cfg, vwhat, sizeof vwhat)) die("volume", "%s", vwhat);
  /* The child finds the overlay as its cwd: the kernel moves a cwd into the copy of the mount
   * namespace that clone makes, and no host path has to be walked with the owner's credentials. */
  if (chdir(cfg.merged)) die("overlay", "chdir %s", cfg.merged);

  int p2c[2], c2p[2];
  if (pipe2(p2c, O_CLOEXEC) || pipe2(c2p, O_CLOEXEC)) die("clone", "pipe");
  fflush(NULL);
  if (become(cfg.owner)) die("owner", "become uid %u", (unsigned)cfg.owner);
  /* Raw clone without a new stack behaves like fork, with namespace flags. The namespaces belong
   * to a user namespace owned by cfg.owner, so the host charges the sandbox's budgets to it. */
  pid_t pid = (pid_t)syscall(SYS_clone, CLONE_FLAGS | SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid == 0) {
    close(p2c[1]);
    close(c2p[0]);
    sandbox_child(&cfg, p2c[0], c2p[1], log_fd);
  }
  int clone_errno = errno;
  if (become(0)) {
    if (pid > 0) kill_child(pid);
    die("owner", "return to root");
  }
  errno = clone_errno;
  if (pid < 0) die("clone", "clone");
  if (owner_record(&cfg, pid)) {
    int e = errno;
    kill_child(pid);
    errno = e;
    die("owner", "record the lease of uid %u", (unsigned)cfg.owner);
  }
  if (cfg.owner_lock_fd >= 0) close(cfg.owner_lock_fd); /* unlocks once the child closed its copy too */
  close(cfg.runtime_tree);
  close_volume_trees(&cfg);
  close(p2c[0]);
  close(c2p[1]);
  close(log_fd);

  /* Written from here, as host root, so no "setgroups deny" is needed: sandbox root keeps
   * setgroups(), which sudo, su and login require. */
  char path[64], map[96];
  snprintf(map, sizeof map, "0 %lu %lu\n", cfg.host_base, cfg.uid_count);
  snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
  if (write_file(path, map)) {
    int e = errno;
    kill_child(pid);
    errno = e;
    die("uidmap", "write %s", path);
  }
  snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
  if (write_file(path, map)) {
    int e = errno;
    kill_child(pid);
    errno = e;
    die("uidmap", "write %s", path);
  }

  /* The network is plumbed before the sandbox runs anything: envd starts with eth0 up. */
  if (cfg.net.veth) {
    char nerr[400];
    snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
    int ns = open(path, O_RDONLY | O_CLOEXEC);
    if (ns < 0) snprintf(nerr, sizeof nerr, "open %s: %s", path, strerror(errno));
    if (ns < 0 || net_plumb(&cfg.net, ns, nerr, sizeof nerr)) {
      kill_child(pid);
      report_error(out_fd, "network", nerr);
      return 1;
    }
    close(ns);
  }

  struct msg m;
  memset(&m, 0, sizeof m);
  if (write(p2c[1], "g", 1) != 1 || read_msg(c2p[0], &m)) {
    kill_child(pid);
    errno = EPIPE;
    die("setup", "sandbox child exited during setup");
  }
  if (m.kind != MSG_OK) {
    kill_child(pid);
    m.step[sizeof m.step - 1] = 0;
    m.text[sizeof m.text - 1] = 0;
    report_error(out_fd, m.step, m.text);
    return 1;
  }
  /* Commit: the child drops its parent-death signal only now, so a launcher killed before this
   * point takes the half-made sandbox with it. */
  if (write(p2c[1], "c", 1) != 1 || read_msg(c2p[0], &m) || m.kind != MSG_ACK) {
    kill_child(pid);
    errno = EPIPE;
    die("commit", "sandbox child did not acknowledge");
  }
  report_pid(out_fd, pid, cfg.owner, cfg.host_base);
  return 0;
}
