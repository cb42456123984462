// envd-exec: drop from root to a sandbox user, then exec the command.
// Usage: envd-exec <uid> <gid> <comma-separated supplementary gids> -- <file> [args...]
// Why a helper: Node's spawn() clears supplementary groups and node-pty keeps the parent's; neither can set the
// user's groups. Exec'ing through this keeps the pid, so the pid envd reports is the command's pid.
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char* what) { fprintf(stderr, "envd-exec: %s: %s\n", what, strerror(errno)); _exit(127); }

int main(int argc, char** argv) {
  if (argc < 6 || strcmp(argv[4], "--") != 0) { fprintf(stderr, "usage: envd-exec uid gid groups -- cmd [args]\n"); return 127; }
  uid_t uid = (uid_t)strtoul(argv[1], NULL, 10);
  gid_t gid = (gid_t)strtoul(argv[2], NULL, 10);
  gid_t groups[256]; size_t n = 0;
  for (char* s = strtok(argv[3], ","); s && n < 256; s = strtok(NULL, ",")) groups[n++] = (gid_t)strtoul(s, NULL, 10);
  if (getuid() == 0 || geteuid() == 0) {
    // setgroups is denied in user namespaces whose /proc/self/setgroups is "deny"; the gid/uid switch still matters.
    if (setgroups(n, groups) < 0 && errno != EPERM) die("setgroups");
    if (setgid(gid) < 0) die("setgid");
    if (setuid(uid) < 0) die("setuid");
  } else if (getuid() != uid) {
    errno = EPERM; die("cannot switch user without root");
  }
  execvp(argv[5], argv + 5);
  fprintf(stderr, "envd-exec: %s: %s\n", argv[5], strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}
