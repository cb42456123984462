/* burrow-sandbox: shared declarations. See README.md in this directory for the CLI contract. */
#ifndef BURROW_SANDBOX_H
#define BURROW_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

#define MAX_LOWER 128
#define MAX_CGROUPS 16
#define MAX_ENV 512

struct config {
  const char *lower[MAX_LOWER]; /* top first, as overlayfs wants them */
  int n_lower;
  const char *upper, *work, *merged, *runtime, *hostname, *log_path;
  unsigned long uid_base, uid_count;
  const char *cgroups[MAX_CGROUPS];
  int n_cgroups;
  const char *env[MAX_ENV + 2]; /* + default PATH + NULL */
  int n_env;
  int no_new_privs;
  unsigned long grace_ms; /* SIGTERM → SIGKILL delay for the init */
  char *const *argv;      /* command, NULL-terminated */
  /* O_PATH fds the child opens while it still has host root's fsuid: as host uid 100000 it may
   * not be allowed to walk the host paths leading to them (e.g. a 0700 state directory). */
  int merged_fd, runtime_fd;
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

/* args.c */
int parse_args(int argc, char **argv, struct config *cfg, char *err, size_t errlen);

/* report.c: the launcher's single line of JSON on stdout. */
void report_pid(int fd, pid_t pid);
void report_error(int fd, const char *step, const char *text);
/* Fill a message with "what: strerror(errno)". */
void msg_error(struct msg *m, const char *step, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* child.c: runs in the new namespaces; never returns. */
void sandbox_child(const struct config *cfg, int from_parent, int to_parent, int log_fd) __attribute__((noreturn));

/* rootfs.c: mounts inside the sandbox. Return 0 or -1 with m filled. */
int setup_rootfs(const struct config *cfg, struct msg *m);

/* mask.c */
int mask_kernel_files(struct msg *m);

/* devices.c */
int setup_dev(struct msg *m);

/* net.c */
int loopback_up(struct msg *m);

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
