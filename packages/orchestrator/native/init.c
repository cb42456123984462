/* The sandbox's pid 1: runs the command, reaps every orphan that lands on it, restarts the
 * command with exponential backoff when it dies (envd must come back), and on SIGTERM/SIGINT
 * asks everything to stop, waits a grace period, then exits, which makes the kernel SIGKILL
 * whatever is left in the pid namespace. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 10000
/* A command that stayed up this long is healthy again: its next crash restarts quickly. */
#define HEALTHY_MS 10000

extern char **environ;

void log_line(int fd, const char *fmt, ...) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "burrow-init: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t w = write(fd, buf, (size_t)n);
  (void)w;
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

pid_t spawn_command(const struct config *cfg, struct msg *m) {
  int ep[2];
  if (pipe2(ep, O_CLOEXEC)) return msg_error(m, "exec", "pipe"), -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(ep[0]);
    close(ep[1]);
    return msg_error(m, "exec", "fork"), -1;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close(ep[0]);
    setsid();
    /* execvp searches the PATH of environ, so the clean environment must be installed first. */
    environ = (char **)cfg->env;
    execvp(cfg->argv[0], cfg->argv);
    int e = errno;
    ssize_t w = write(ep[1], &e, sizeof e);
    (void)w;
    _exit(127);
  }
  close(ep[1]);
  int e = 0;
  ssize_t n;
  do n = read(ep[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  close(ep[0]);
  if (n == (ssize_t)sizeof e) {
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    errno = e;
    return msg_error(m, "exec", "exec %s", cfg->argv[0]), -1;
  }
  return pid;
}

static void shutdown_all(const struct config *cfg, const sigset_t *set, int log_fd) __attribute__((noreturn));
static void shutdown_all(const struct config *cfg, const sigset_t *set, int log_fd) {
  log_line(log_fd, "stopping: SIGTERM to all, %lu ms grace", cfg->grace_ms);
  kill(-1, SIGTERM);
  long long deadline = now_ms() + (long long)cfg->grace_ms;
  for (;;) {
    pid_t p;
    while ((p = waitpid(-1, NULL, WNOHANG)) > 0) {
    }
    if (p < 0 && errno == ECHILD) break;
    long long left = deadline - now_ms();
    if (left <= 0) break;
    struct timespec ts = {left / 1000, (left % 1000) * 1000000};
    sigtimedwait(set, NULL, &ts);
  }
  kill(-1, SIGKILL);
  _exit(0);
}

void run_init(const struct config *cfg, pid_t cmd, int log_fd) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  log_line(log_fd, "started %s as pid %d", cfg->argv[0], (int)cmd);
  long long started = now_ms(), restart_at = 0;
  long backoff = 0;
  for (;;) {
    struct timespec ts, *timeout = NULL;
    if (cmd <= 0) {
      long long left = restart_at - now_ms();
      if (left < 0) left = 0;
      ts.tv_sec = left / 1000;
      ts.tv_nsec = (left % 1000) * 1000000;
      timeout = &ts;
    }
    int sig = sigtimedwait(&set, NULL, timeout);
    if (sig == SIGTERM || sig == SIGINT) shutdown_all(cfg, &set, log_fd);
    if (sig < 0 && errno == EAGAIN && cmd <= 0) {
      struct msg m;
      cmd = spawn_command(cfg, &m);
      started = now_ms();
      if (cmd < 0) {
        m.text[sizeof m.text - 1] = 0;
        log_line(log_fd, "restart failed: %s", m.text);
        backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2) : BACKOFF_MIN_MS;
        restart_at = now_ms() + backoff;
      } else {
        log_line(log_fd, "restarted %s as pid %d", cfg->argv[0], (int)cmd);
      }
      continue;
    }
    /* SIGCHLD (or a spurious wake-up): reap everything that has exited. */
    int status;
    pid_t p;
    while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
      if (p != cmd) continue;
      if (WIFSIGNALED(status)) log_line(log_fd, "%s (pid %d) killed by signal %d", cfg->argv[0], (int)p, WTERMSIG(status));
      else log_line(log_fd, "%s (pid %d) exited with %d", cfg->argv[0], (int)p, WEXITSTATUS(status));
      long long ran = now_ms() - started;
      if (ran >= HEALTHY_MS) backoff = BACKOFF_MIN_MS;
      else backoff = backoff ? (backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2) : BACKOFF_MIN_MS;
      restart_at = now_ms() + backoff;
      log_line(log_fd, "restarting in %ld ms", backoff);
      cmd = 0;
    }
  }
}
