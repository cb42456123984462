/* burrow-sandbox: shared declarations. See README.md in this directory for the CLI contract. */
#ifndef BURROW_SANDBOX_H
#define BURROW_SANDBOX_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/types.h>

#define MAX_LOWER 128
#define MAX_CGROUPS 16
#define MAX_ENV 512
#define MAX_USERNS_LIMITS 16
#define MAX_VOLUMES 16

/* The new mount API's flags, for C libraries whose headers predate them. */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif

/* The sandbox's network (netlink.c): veth == NULL for none. */
struct net_config {
  const char *veth, *bridge; /* host end of the veth pair, and the bridge it joins */
  unsigned char mac[6];      /* eth0's */
  int has_mac, has_gateway;
  struct in_addr addr, gateway;
  int prefix;
  unsigned mtu;
};

struct config {
  const char *lower[MAX_LOWER]; /* top first, as overlayfs wants them */
  int n_lower;
  const char *upper, *work, *merged, *runtime, *hostname, *log_path;
  const char *boot_id; /* what /proc/sys/kernel/random/boot_id shows inside (NULL: the host's) */
  unsigned long uid_base, uid_count;
  /* Host uids that may own the sandbox's user namespace (owner.c); count 0: host root owns it. */
  unsigned long owner_base, owner_count;
  /* Per-sandbox host ranges (idmap.c): 0 for none, every sandbox then runs as uid_base… */
  unsigned long ranges_base;
  const char *cgroups[MAX_CGROUPS];
  int n_cgroups;
  const char *env[MAX_ENV + 2]; /* + default PATH + NULL */
  int n_env;
  int no_new_privs;
  unsigned long grace_ms; /* SIGTERM → SIGKILL delay for the init */
  char *const *argv;      /* command, NULL-terminated */
  struct net_config net;
  /* --volume HOST=PATH: host directories bound read-write at PATH inside (volumes.c). */
  const char *volume_src[MAX_VOLUMES], *volume_dst[MAX_VOLUMES];
  int n_volumes;
  /* Filled in by the launcher, not from the command line. */
  uid_t owner;        /* host uid owning the sandbox's user namespace (0: host root) */
  unsigned long host_base; /* first host uid of the sandbox's map: uid_base, or its own range */
  int owner_lock_fd;  /* the locked lease registry, or -1; the child closes its copy at once */
  /* The runtime as a detached read-only mount tree, made by the launcher as host root: the child
   * cannot walk host paths (e.g. a 0700 state directory) with its own credentials. */
  int runtime_tree;
  /* The overlay in the child's own mount namespace, opened from the cwd it inherits. */
  int merged_fd;
  /* The volumes as detached mounts (idmapped with per-sandbox ranges), made by the launcher as host
   * root like runtime_tree; the child attaches them once "/" is the overlay. */
  int volume_tree[MAX_VOLUMES];
  /* Values for the sandbox namespace's /proc/sys/user/ files, -1 to leave one alone (limits.c). */
  long userns_limits[MAX_USERNS_LIMITS];
};

/* Messages between the launcher and the sandbox child; each fits in one atomic pipe write. */
enum msg_kind { MSG_OK = 1, MSG_ERROR = 2, MSG_ACK = 3 };
struct msg {
  int kind;
  char step[24];
  char text[220];
};

/* The process's argument area (argv strings, contiguous), recorded by main for hide_cmdline. */
extern char *g_arg_start, *g_arg_end;

/* args.c; parse_ulong: a decimal unsigned number (0, or -1); bad_path: not absolute, or holding one of , : \ */
int parse_args(int argc, char **argv, struct config *cfg, char *err, size_t errlen);
int parse_ulong(const char *s, unsigned long *out);
int bad_path(const char *p);

/* report.c: the launcher's single line of JSON on stdout. */
void report_pid(int fd, pid_t pid, uid_t owner, unsigned long host_base);
void report_error(int fd, const char *step, const char *text);
/* Fill a message with "what: strerror(errno)". */
void msg_error(struct msg *m, const char *step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* owner.c: lease a namespace owner uid. Return 0 or -1 with errno set and *what naming the step. */
int owner_lease(struct config *cfg, const char **what);
int owner_record(const struct config *cfg, pid_t pid);

/* idmap.c: a user namespace fd whose map turns canonical ids into the sandbox's host range, and a
 * detached copy of path idmapped with it. Both return -1 with errno set on failure. */
int idmap_userns(const struct config *cfg);
int idmapped_tree(int dirfd, const char *path, int userns);

/* limits.c: per-namespace budgets. read_host_limits runs in the launcher (it sees the host's
 * values), write_userns_limits in the child (it sees and may set its namespace's). */
void read_host_limits(struct config *cfg);
/* The start of a small file as a NUL-terminated string: bytes read, or -1. */
ssize_t read_text(const char *path, char *buf, size_t size);
int write_userns_limits(const struct config *cfg, struct msg *m);

/* child.c: runs in the new namespaces; never returns. */
void sandbox_child(const struct config *cfg, int from_parent, int to_parent, int log_fd) __attribute__((noreturn));

/* rootfs.c: mounts inside the sandbox. Return 0 or -1 with m filled. */
int setup_rootfs(const struct config *cfg, struct msg *m);

/* volumes.c: volume_trees runs in the launcher (host root), attach_volumes in the child after
 * pivot_root. parse_volume: 0, or -1 with err filled. */
int parse_volume(const char *v, struct config *cfg, char *err, size_t errlen);
int volume_trees(struct config *cfg, char *what, size_t whatlen); /* -1 with errno and what set */
int attach_volumes(const struct config *cfg, struct msg *m);
void close_volume_trees(const struct config *cfg);
/* attach.c: the --attach-volumes mode (argv[1]), run instead of a launch; returns the exit code. */
int attach_main(int argc, char **argv);
/* running.c: the sandbox a mode acts on (its init's pid and recorded start time, field 22 of /proc/PID/stat) and
 * its namespaces. parse_running_option: 1 when `a` is `mode` (the pid) or --start-time/--uid-base/--uid-count/
 * --host-base (value parsed), 0 when not, -1 for a bad value. finish_running_options: 0 when all are there (and
 * sets cfg->ranges_base), else -1. open_running (as host root, before anything else) and enter_running (then as
 * sandbox root in its user and mount namespaces and root): NULL, or a printf format with one %s (the pid) naming
 * what failed, errno set. */
struct running {
  unsigned long pid, start_time;
  int userns, mntns, root;
};
int parse_running_option(const char *a, const char *v, const char *mode, struct running *r, struct config *cfg);
/* A mode's own option (0, or -1 with err filled); parse_mode_args reads `--opt value` pairs with it after the
 * shared ones and returns 0, or 2 once it reported a usage error. */
typedef int (*mode_option_fn)(const char *a, const char *v, struct config *cfg, char *err, size_t errlen);
int parse_mode_args(int argc, char **argv, const char *mode, struct running *r, struct config *cfg, mode_option_fn other);
int finish_running_options(const struct running *r, struct config *cfg);
const char *open_running(struct running *r);
const char *enter_running(const struct running *r);
/* swap.c: the --swap-root mode (argv[1]): a running sandbox's "/" becomes a new overlay; returns the exit code. */
int swap_main(int argc, char **argv);
/* main.c: report {"error","step"} on stdout and exit 1; the overlay of cfg mounted at cfg->merged (dies on failure). */
void die(const char *step, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void mount_overlay(const struct config *cfg);
/* main.c: the upper's root made sandbox root's (the merged root's owner comes from it; dies on failure). */
void own_upper(const struct config *cfg);

/* mask.c */
int mask_kernel_files(struct msg *m);
int bind_boot_id(const char *boot_id, struct msg *m);

/* devices.c */
int setup_dev(struct msg *m);

/* net.c */
int loopback_up(struct msg *m);

/* netlink.c: plumb the veth into the namespace `sandbox_ns` (an fd) and onto the bridge, as host root. 0, or -1
 * with err filled. parse_net_option: 1 when opt is a --net-* option (its value parsed), 0 when not, -1 on error. */
int net_plumb(const struct net_config *nc, int sandbox_ns, char *err, size_t errlen);
int parse_net_option(const char *opt, const char *val, struct net_config *nc, char *err, size_t errlen);
int check_net_config(const struct net_config *nc, char *err, size_t errlen);

/* caps.c */
int drop_capabilities(struct msg *m);
int restrict_own_caps(struct msg *m);

/* filter.c */
int load_seccomp(struct msg *m);

/* init.c: pid 1. spawn_command returns the child's pid, or -1 with m filled when exec failed. */
pid_t spawn_command(const struct config *cfg, struct msg *m);
void run_init(const struct config *cfg, pid_t cmd, int log_fd) __attribute__((noreturn));
void log_line(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
