/*
 * burrow-reaper's command requests: run a host tool (nft, ip, btrfs…) for the orchestrator and stream back what it
 * prints and how it ended. Forking a small process here costs microseconds; a Node server forking itself to run
 * the same tool copies the page tables of its whole heap on its event-loop thread, which costs milliseconds, and
 * tens of them on a loaded host.
 *
 * Runs in a worker the reaper forked for one connection. The request's bytes after its arguments, and whatever the
 * client sends until it shuts down its sending side, are the command's stdin. The answer is a sequence of frames:
 * a type byte ('o' stdout, 'e' stderr, 'x' exit), a 32-bit length in host order, then that many bytes; 'x' comes
 * last and carries the 32-bit wait status. A client that closes the connection cancels the command (SIGKILL).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "command.h"

static char *const COMMAND_ENV[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C", NULL};

/* How long a finished command's worker keeps reading stdin nobody wants, waiting for the client's shut-down. */
#define DRAIN_MS 2000

static long long drain_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len > 0) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      struct pollfd w = {.fd = fd, .events = POLLOUT};
      poll(&w, 1, -1);
      continue;
    }
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* A frame to the client; a client that went away is no reason to stop (the command is being killed then). */
static void frame(int conn, char type, const void *data, uint32_t len) {
  char head[5];
  head[0] = type;
  memcpy(head + 1, &len, sizeof len);
  if (write_all(conn, head, sizeof head) == 0 && len > 0) write_all(conn, data, len);
}

void run_command(int conn, char *const argv[], const char *stdin_start, size_t stdin_len, const sigset_t *blocked) {
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
    const char *msg = "burrow-reaper: cannot create pipes\n";
    frame(conn, 'e', msg, (uint32_t)strlen(msg));
    uint32_t status = 127 << 8;
    frame(conn, 'x', &status, sizeof status);
    _exit(1);
  }
  pid_t worker = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    sigprocmask(SIG_UNBLOCK, blocked, NULL);
    signal(SIGPIPE, SIG_DFL);
    /* The command dies with its worker, which dies when the reaper cancels it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != worker) _exit(127);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    close_range(3, ~0U, 0);
    execvpe(argv[0], argv, COMMAND_ENV);
    dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (pid < 0) {
    const char *msg = "burrow-reaper: cannot fork the command\n";
    frame(conn, 'e', msg, (uint32_t)strlen(msg));
    close(out[0]);
    close(err[0]);
  }
  fcntl(in[1], F_SETFL, O_NONBLOCK);

  /* Pending stdin: what came with the request, then what arrives on the connection. */
  size_t cap = stdin_len > 65536 ? stdin_len : 65536, len = stdin_len;
  char *pending = malloc(cap);
  if (!pending) _exit(1);
  memcpy(pending, stdin_start, stdin_len);
  int stdin_open = 1, in_fd = in[1], out_fd = pid > 0 ? out[0] : -1, err_fd = pid > 0 ? err[0] : -1, gone = 0;
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    if (in_fd >= 0 && !stdin_open && len == 0) {
      close(in_fd);
      in_fd = -1;
    }
    struct pollfd fds[4] = {
        {.fd = gone ? -1 : conn, .events = (short)(stdin_open && len < cap ? POLLIN : 0)},
        {.fd = in_fd >= 0 && len > 0 ? in_fd : -1, .events = POLLOUT},
        {.fd = out_fd, .events = POLLIN},
        {.fd = err_fd, .events = POLLIN},
    };
    if (poll(fds, 4, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents & (POLLHUP | POLLERR)) {
      /* The client closed the connection: cancel. */
      kill(pid, SIGKILL);
      gone = 1;
    } else if (fds[0].revents & POLLIN) {
      ssize_t n = read(conn, pending + len, cap - len);
      if (n > 0) len += (size_t)n;
      else if (n == 0 || (errno != EINTR && errno != EAGAIN)) stdin_open = 0;
    }
    if (fds[1].revents) {
      ssize_t n = write(in_fd, pending, len);
      if (n > 0) {
        memmove(pending, pending + n, len - (size_t)n);
        len -= (size_t)n;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        /* The command closed its stdin: the rest is not wanted. */
        len = 0;
        stdin_open = 0;
      }
    }
    for (int k = 2; k < 4; k++) {
      if (!fds[k].revents) continue;
      int *fd = k == 2 ? &out_fd : &err_fd;
      ssize_t n = read(*fd, buf, sizeof buf);
      if (n > 0) {
        if (!gone) frame(conn, k == 2 ? 'o' : 'e', buf, (uint32_t)n);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(*fd);
        *fd = -1;
      }
    }
  }
  int status = 127 << 8;
  if (pid > 0)
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  uint32_t word = (uint32_t)status;
  if (!gone) frame(conn, 'x', &word, sizeof word);
  /* Read what the client still sends (stdin the command did not want) until it shuts down its side: closing with
   * unread bytes would make the client's pending write fail with EPIPE before it reads the answer. Bounded. */
  for (long long until = drain_now_ms() + DRAIN_MS; !gone && stdin_open;) {
    long long left = until - drain_now_ms();
    struct pollfd r = {.fd = conn, .events = POLLIN};
    if (left <= 0 || poll(&r, 1, (int)left) <= 0) break;
    ssize_t n = read(conn, buf, sizeof buf);
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;
  }
  _exit(0);
}
