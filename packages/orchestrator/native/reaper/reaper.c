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
 * A launch is cancellable: a client that closes the connection, or shuts down its sending side, while the
 * launcher runs gets the launcher SIGKILLed. Until it commits, a launcher takes its half-made sandbox with it
 * (the sandbox child has a parent-death signal); one that had already committed has printed its report, which
 * a client that only shut down its sending side still reads before EOF (and then kills that sandbox itself).
 * EOF therefore always means the launcher is gone: the reaper holds the connection until it has reaped it.
 *
 * A request whose first argument is `--exec` runs a host command instead (command.c): the orchestrator's tools
 * (nft, ip, btrfs…) are forked from here rather than from the server, whose every fork copies the page tables of
 * its whole heap. The arguments after `--exec` are the command; the bytes after the request, until the client
 * shuts down its sending side, are its stdin; the answer is framed output and the exit status. Closing the
 * connection cancels it.
 *
 * One client never holds up another: connections are non-blocking and served from one poll loop, each request
 * is collected as its bytes arrive, and a connection that has not sent a whole request within
 * the request timeout is answered with an error and closed. A client that connects and sends nothing (or half a
 * request) therefore costs one slot for a while, never the reaper's attention.
 *
 * Usage: burrow-reaper --socket PATH --pidfile PATH --launcher PATH [--request-timeout-ms N]
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
#include <time.h>
#include <unistd.h>

#include "command.h"

#define MAX_REQUEST (256 * 1024)
#define MAX_ARGS 4096
/* Connections being read at once; more wait in the listen backlog until a slot frees. */
#define MAX_CLIENTS 64
/* Launches watched for cancellation at once; beyond that a launch still runs, it just cannot be cancelled. */
#define MAX_RUNNING 512
/* A legitimate client writes its whole request right after connecting, but "right after" is when its event loop
 * runs the connect callback: a Node server on a host with hundreds of sandboxes starting can stall for seconds.
 * A client refused before it wrote sees EPIPE, so the default leaves a wide margin (--request-timeout-ms). */
#define DEFAULT_REQUEST_TIMEOUT_MS 60000
static long long request_timeout_ms = DEFAULT_REQUEST_TIMEOUT_MS;

static const char *socket_path, *pidfile_path, *launcher_path;

/* A connection whose request is still arriving. fd < 0: free slot. */
struct client {
  int fd;
  char *buf;
  size_t len, cap;
  long long deadline_ms;
};

static struct client clients[MAX_CLIENTS];
static int n_clients;

/* A launcher running for a client: its connection is watched for a hang-up until the launcher is reaped.
 * fd < 0: free slot. */
struct running {
  int fd;
  pid_t pid;
  int cancelled; /* SIGKILL sent; no longer polled, only waiting to be reaped */
};

static struct running running[MAX_RUNNING];

static void die(const char *what) {
  fprintf(stderr, "burrow-reaper: %s: %s\n", what, strerror(errno));
  exit(1);
}

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reap every child that exited (sandbox inits and launchers); a launcher's connection ends with it. */
static void reap_all(void) {
  pid_t pid;
  while ((pid = waitpid(-1, NULL, WNOHANG)) > 0) {
    for (int i = 0; i < MAX_RUNNING; i++) {
      if (running[i].fd < 0 || running[i].pid != pid) continue;
      close(running[i].fd);
      running[i] = (struct running){.fd = -1};
      break;
    }
  }
}

/* Free a client slot; its connection stays open (the caller closes or keeps it). */
static void release(struct client *c) {
  free(c->buf);
  *c = (struct client){.fd = -1};
  n_clients--;
}

static void drop(struct client *c) {
  close(c->fd);
  release(c);
}

/* Watch the connection of a launcher just forked; without a free slot it is closed (not cancellable). */
static void watch_launch(int fd, pid_t pid) {
  for (int i = 0; i < MAX_RUNNING; i++) {
    if (running[i].fd >= 0) continue;
    running[i] = (struct running){.fd = fd, .pid = pid};
    return;
  }
  close(fd);
}

/* The client went away (or asked to cancel by shutting down its side): stop the launcher. Its connection is
 * closed once it has been reaped, so that the client's EOF means the launcher is gone. */
static void cancel_launch(struct running *r) {
  kill(r->pid, SIGKILL);
  r->cancelled = 1;
}

/* Answer a request that will not be run (the client reads this line as the launcher's report) and drop it. */
static void refuse(struct client *c, const char *why) {
  dprintf(c->fd, "{\"error\":\"%s\",\"step\":\"reaper-request\"}\n", why);
  drop(c);
}

/* Run the launcher with the request in c->buf[0..end) (NUL-separated args) on the connection, then drop it. */
static void launch(struct client *c, size_t end, const sigset_t *blocked) {
  char *argv[MAX_ARGS + 2];
  int argc = 0;
  argv[argc++] = (char *)launcher_path;
  for (size_t off = 0; off < end;) {
    if (argc > MAX_ARGS) {
      refuse(c, "malformed launch request");
      return;
    }
    argv[argc++] = c->buf + off;
    off += strlen(c->buf + off) + 1;
  }
  argv[argc] = NULL;
  if (argc >= 3 && strcmp(argv[1], "--exec") == 0) {
    pid_t worker = fork();
    if (worker < 0) {
      refuse(c, "cannot fork a command worker");
      return;
    }
    if (worker == 0) run_command(c->fd, argv + 2, c->buf + end + 1, c->len - (end + 1), blocked);
    /* The worker holds the connection: the client's EOF comes when it is done. */
    drop(c);
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    refuse(c, "cannot fork the launcher");
    return;
  }
  if (pid == 0) {
    sigprocmask(SIG_UNBLOCK, blocked, NULL);
    /* The launcher writes its report with plain blocking writes. */
    int flags = fcntl(c->fd, F_GETFL);
    if (flags >= 0) fcntl(c->fd, F_SETFL, flags & ~O_NONBLOCK);
    dup2(c->fd, STDOUT_FILENO);
    dup2(c->fd, STDERR_FILENO);
    close(c->fd);
    execv(launcher_path, argv);
    dprintf(STDOUT_FILENO, "{\"error\":\"cannot execute launcher: %s\",\"step\":\"reaper-exec\"}\n", strerror(errno));
    _exit(127);
  }
  int fd = c->fd;
  release(c);
  watch_launch(fd, pid);
}

/*
 * Read what a client has sent so far. A request ends with an empty argument: two NULs in a row, or a NUL as the
 * very first byte (no arguments). Bytes after the end are ignored.
 */
static void on_readable(struct client *c, const sigset_t *blocked) {
  for (;;) {
    if (c->len == c->cap) {
      if (c->cap == MAX_REQUEST) {
        refuse(c, "malformed launch request");
        return;
      }
      size_t cap = c->cap ? c->cap * 2 : 4096;
      if (cap > MAX_REQUEST) cap = MAX_REQUEST;
      char *buf = realloc(c->buf, cap);
      if (!buf) {
        refuse(c, "out of memory");
        return;
      }
      c->buf = buf;
      c->cap = cap;
    }
    ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      /* EOF or an error before the request was complete. */
      refuse(c, "malformed launch request");
      return;
    }
    size_t from = c->len ? c->len - 1 : 0;
    c->len += (size_t)n;
    if (c->buf[0] == '\0') {
      launch(c, 0, blocked);
      return;
    }
    for (size_t i = from; i + 1 < c->len; i++) {
      if (c->buf[i] == '\0' && c->buf[i + 1] == '\0') {
        launch(c, i + 1, blocked);
        return;
      }
    }
  }
}

static void accept_clients(int listener) {
  while (n_clients < MAX_CLIENTS) {
    int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return; /* EAGAIN: none left; anything else (EMFILE, ECONNABORTED): try again at the next poll */
    for (int i = 0; i < MAX_CLIENTS; i++) {
      if (clients[i].fd >= 0) continue;
      clients[i] = (struct client){.fd = fd, .deadline_ms = now_ms() + request_timeout_ms};
      n_clients++;
      break;
    }
  }
}

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--socket")) socket_path = argv[i + 1];
    else if (!strcmp(argv[i], "--pidfile")) pidfile_path = argv[i + 1];
    else if (!strcmp(argv[i], "--launcher")) launcher_path = argv[i + 1];
    else if (!strcmp(argv[i], "--request-timeout-ms")) {
      char *end;
      request_timeout_ms = strtoll(argv[i + 1], &end, 10);
      if (*end || end == argv[i + 1] || request_timeout_ms < 100 || request_timeout_ms > 3600000) {
        fprintf(stderr, "burrow-reaper: bad --request-timeout-ms %s (100-3600000)\n", argv[i + 1]);
        return 2;
      }
    }
  }
  char incomplete[80];
  snprintf(incomplete, sizeof incomplete, "launch request incomplete after %lld ms", request_timeout_ms);
  if (!socket_path || !pidfile_path || !launcher_path) {
    fprintf(stderr, "usage: burrow-reaper --socket PATH --pidfile PATH --launcher PATH [--request-timeout-ms N]\n");
    return 2;
  }

  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(socket_path) >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    die("socket path");
  }
  strcpy(addr.sun_path, socket_path);
  unlink(socket_path);
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listener < 0) die("socket");
  mode_t old_mask = umask(0077);
  if (bind(listener, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
  umask(old_mask);
  /*
   * Every create sends the reaper a launch and a few host commands (btrfs, nft), all at once: a burst of a hundred
   * creates is hundreds of connections in one tick of the server's event loop. A full backlog makes connect() fail
   * with EAGAIN (a failed create), so it holds as many as the kernel allows (net.core.somaxconn caps it).
   */
  if (listen(listener, 4096) < 0) die("listen");

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

  for (int i = 0; i < MAX_CLIENTS; i++) clients[i].fd = -1;
  for (int i = 0; i < MAX_RUNNING; i++) running[i].fd = -1;
  for (;;) {
    /* fds[0]: signals, fds[1]: the listener (ignored while every slot is taken), then one per client, then one
     * per running launch (only its hang-up is of interest: POLLRDHUP, and POLLHUP/POLLERR, always reported). */
    struct pollfd fds[2 + MAX_CLIENTS + MAX_RUNNING];
    int slot_of[2 + MAX_CLIENTS + MAX_RUNNING];
    int nfds = 2;
    fds[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = n_clients < MAX_CLIENTS ? listener : -1, .events = POLLIN};
    long long next_deadline = -1;
    for (int i = 0; i < MAX_CLIENTS; i++) {
      if (clients[i].fd < 0) continue;
      slot_of[nfds] = i;
      fds[nfds++] = (struct pollfd){.fd = clients[i].fd, .events = POLLIN};
      if (next_deadline < 0 || clients[i].deadline_ms < next_deadline) next_deadline = clients[i].deadline_ms;
    }
    int first_running = nfds;
    for (int i = 0; i < MAX_RUNNING; i++) {
      if (running[i].fd < 0 || running[i].cancelled) continue;
      slot_of[nfds] = i;
      fds[nfds++] = (struct pollfd){.fd = running[i].fd, .events = POLLRDHUP};
    }
    int timeout = -1;
    if (next_deadline >= 0) {
      long long wait = next_deadline - now_ms();
      timeout = wait < 0 ? 0 : wait > 60000 ? 60000 : (int)wait;
    }
    if (poll(fds, (nfds_t)nfds, timeout) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (fds[0].revents & POLLIN) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) == sizeof info) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) {
          unlink(socket_path);
          unlink(pidfile_path);
          return 0;
        }
      }
    }
    for (int k = 2; k < first_running; k++) {
      struct client *c = &clients[slot_of[k]];
      if (c->fd == fds[k].fd && fds[k].revents) on_readable(c, &blocked);
    }
    /* A launch forked in this iteration is watched from the next poll on. */
    for (int k = first_running; k < nfds; k++) {
      struct running *r = &running[slot_of[k]];
      if (r->fd == fds[k].fd && (fds[k].revents & (POLLRDHUP | POLLHUP | POLLERR))) cancel_launch(r);
    }
    long long now = now_ms();
    for (int i = 0; i < MAX_CLIENTS; i++) {
      if (clients[i].fd >= 0 && clients[i].deadline_ms <= now) refuse(&clients[i], incomplete);
    }
    if (fds[1].revents & POLLIN) accept_clients(listener);
    reap_all();
  }
}
