/*
 * burrow-reaper: the long-lived parent of every sandbox init on a host.
 *
 * A sandbox must outlive the server that created it (restart safety), so its init cannot stay the server's
 * child. Left to itself it would be reparented to the host's PID 1, and not every PID 1 reaps orphans (a
 * container's shell, some VM inits): a dead sandbox would then linger as a zombie. The reaper is a child
 * subreaper that runs the launcher on request, so every sandbox init ends up as its child and is reaped the
 * moment it exits, whatever the host's PID 1 does and whether or not a server is running.
 *
 * Protocol on the unix socket (mode 0600, root only): the client sends the launcher's arguments as
 * NUL-terminated strings followed by one empty string; the reaper runs the launcher with its stdout and
 * stderr on the connection, and the client reads until EOF.
 *
 * Usage: burrow-reaper --socket PATH --pidfile PATH --launcher PATH
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_REQUEST (256 * 1024)
#define MAX_ARGS 4096

static const char *socket_path, *pidfile_path, *launcher_path;

static void die(const char *what) {
  fprintf(stderr, "burrow-reaper: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void reap_all(void) {
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

/* Read one request (args separated by NUL, ended by an empty arg) and run the launcher with it. */
static void serve(int conn, const sigset_t *blocked) {
  static char buf[MAX_REQUEST];
  size_t len = 0;
  for (;;) {
    if (len >= 2 && buf[len - 1] == '\0' && buf[len - 2] == '\0') break;
    if (len == 1 && buf[0] == '\0') break;
    if (len == sizeof buf) goto bad;
    ssize_t n = read(conn, buf + len, sizeof buf - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) goto bad;
    len += (size_t)n;
  }
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = (char *)launcher_path;
  for (size_t off = 0; off < len && buf[off] != '\0';) {
    if (argc > MAX_ARGS) goto bad;
    argv[argc++] = buf + off;
    off += strlen(buf + off) + 1;
  }
  argv[argc] = NULL;
  pid_t pid = fork();
  if (pid < 0) goto bad;
  if (pid == 0) {
    sigprocmask(SIG_UNBLOCK, blocked, NULL);
    dup2(conn, STDOUT_FILENO);
    dup2(conn, STDERR_FILENO);
    close(conn);
    execv(launcher_path, argv);
    dprintf(STDOUT_FILENO, "{\"error\":\"cannot execute launcher: %s\",\"step\":\"reaper-exec\"}\n", strerror(errno));
    _exit(127);
  }
  close(conn);
  return;
bad:
  dprintf(conn, "{\"error\":\"malformed launch request\",\"step\":\"reaper-request\"}\n");
  close(conn);
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--socket")) socket_path = argv[i + 1];
    else if (!strcmp(argv[i], "--pidfile")) pidfile_path = argv[i + 1];
    else if (!strcmp(argv[i], "--launcher")) launcher_path = argv[i + 1];
  }
  if (!socket_path || !pidfile_path || !launcher_path) {
    fprintf(stderr, "usage: burrow-reaper --socket PATH --pidfile PATH --launcher PATH\n");
    return 2;
  }

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(socket_path) >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    die("socket path");
  }
  strcpy(addr.sun_path, socket_path);
  unlink(socket_path);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) die("socket");
  mode_t old_mask = umask(0077);
  if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
  umask(old_mask);
  if (listen(listener, 128) < 0) die("listen");

  /*
   * No daemonizing fork: the reaper stays the child of the server that started it, so stopping it in an orderly
   * shutdown leaves no zombie behind even on hosts whose PID 1 does not reap. Its own session keeps a terminal's
   * Ctrl-C (sent to the server's process group) from reaching it; if the server dies, it carries on.
   */
  setsid();
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) die("PR_SET_CHILD_SUBREAPER");
  if (chdir("/") < 0) die("chdir");
  int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    if (devnull > 2) close(devnull);
  }

  FILE *pidfile = fopen(pidfile_path, "w");
  if (!pidfile) die("pidfile");
  fprintf(pidfile, "%d\n", getpid());
  fclose(pidfile);

  sigset_t blocked;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGCHLD);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGPIPE);
  sigprocmask(SIG_BLOCK, &blocked, NULL);
  int sfd = signalfd(-1, &blocked, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) die("signalfd");

  struct pollfd fds[2] = {{.fd = listener, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (fds[1].revents & POLLIN) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) {
          unlink(socket_path);
          unlink(pidfile_path);
          return 0;
        }
      }
      reap_all();
    }
    if (fds[0].revents & POLLIN) {
      int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
      if (conn >= 0) serve(conn, &blocked);
    }
    reap_all();
  }
}
