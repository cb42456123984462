// The splice relay engine: see relay.h. One thread, one epoll set (edge-triggered) over every relayed socket and an
// eventfd through which the JS thread hands over new pairs and asks the thread to stop. Each direction of a pair
// has a pipe: splice socket -> pipe -> socket moves page references, never copying the bytes into user space.
// When a side reaches EOF and its pipe is drained, the other side gets shutdown(SHUT_WR) (half-close goes through);
// a pair ends when both directions have. Errors are per direction: one that cannot read any more (a reset) still
// delivers what it read, like an EOF, and the direction writing to that dead socket is done; one that cannot write
// drops its bytes. An answer already on its way (a server that answers and resets) is not lost.
#define _GNU_SOURCE
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

// Bigger pipes mean fewer wake-ups of a bulk transfer; pages are only taken while data sits in them.
#define PIPE_BYTES (1 << 20)
#define MAX_EVENTS 64

struct dir {
  int src, dst;
  int pipe_r, pipe_w;
  size_t in_pipe, pipe_cap;
  unsigned char *head; // bytes read from src before the handover, written to dst first
  size_t head_len, head_off;
  bool eof, shut;
  bool failed;   // cannot write to dst any more: done, its bytes dropped
  bool src_dead; // reading src failed (reset, timed out): the other direction cannot write to it either
  int err;       // the first error of this direction (positive errno), 0 if none
  uint64_t bytes;
};

struct pair {
  uint64_t id;
  int fd[2];
  struct dir d[2]; // d[0]: a -> b, d[1]: b -> a
  bool closed;
  struct pair *prev, *next;
};

struct relay_engine {
  int epfd, evfd;
  pthread_t thread;
  pthread_mutex_t lock;
  struct pair *incoming; // guarded by lock
  bool stopping;         // guarded by lock
  struct pair *active;   // worker only
  struct pair *dead;     // worker only: closed during the current batch of events, freed after it
  atomic_size_t count;
  relay_done_fn done;
  void *ctx;
};

static void dir_free(struct dir *d) {
  if (d->pipe_r >= 0) close(d->pipe_r);
  if (d->pipe_w >= 0) close(d->pipe_w);
  d->pipe_r = d->pipe_w = -1;
  free(d->head);
  d->head = NULL;
}

static void pair_free(struct pair *p) {
  for (int i = 0; i < 2; i++) {
    dir_free(&p->d[i]);
    if (p->fd[i] >= 0) close(p->fd[i]);
  }
  free(p);
}

static int dir_init(struct dir *d, int src, int dst, const void *head, size_t head_len) {
  memset(d, 0, sizeof *d);
  d->src = src;
  d->dst = dst;
  d->pipe_r = d->pipe_w = -1;
  int p[2];
  if (pipe2(p, O_NONBLOCK | O_CLOEXEC) < 0) return -errno;
  d->pipe_r = p[0];
  d->pipe_w = p[1];
  // A smaller pipe still works (an unprivileged user past its pipe quota gets the default).
  (void)fcntl(d->pipe_w, F_SETPIPE_SZ, PIPE_BYTES);
  int cap = fcntl(d->pipe_w, F_GETPIPE_SZ);
  d->pipe_cap = cap > 0 ? (size_t)cap : 65536;
  if (head_len > 0) {
    d->head = malloc(head_len);
    if (!d->head) return -ENOMEM;
    memcpy(d->head, head, head_len);
    d->head_len = head_len;
  }
  return 0;
}

static bool dir_done(const struct dir *d) { return d->shut || d->failed; }

static void dir_fail(struct dir *d, int err) {
  d->failed = true;
  if (!d->err) d->err = err;
}

/** Move what can move now in one direction; errors are kept in the direction (see the file's comment). */
static void dir_pump(struct dir *d) {
  if (dir_done(d)) return;
  for (;;) {
    bool progress = false;
    if (d->head_off < d->head_len) {
      ssize_t n = send(d->dst, d->head + d->head_off, d->head_len - d->head_off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        d->head_off += (size_t)n;
        d->bytes += (uint64_t)n;
        progress = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        dir_fail(d, errno);
        return;
      }
    }
    // Pipe slots hold partial pages, so a pipe can be full with fewer than pipe_cap bytes: splice then answers
    // EAGAIN, the loop drains the pipe and comes back here.
    if (!d->eof && d->in_pipe < d->pipe_cap) {
      ssize_t n = splice(d->src, NULL, d->pipe_w, NULL, d->pipe_cap - d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d->in_pipe += (size_t)n;
        progress = true;
      } else if (n == 0) {
        d->eof = true;
        progress = true;
      } else if (errno != EAGAIN && errno != EINTR) {
        // What was read before the error still goes out.
        d->eof = true;
        d->src_dead = true;
        if (!d->err) d->err = errno;
        progress = true;
      }
    }
    if (d->head_off == d->head_len && d->in_pipe > 0) {
      ssize_t n = splice(d->pipe_r, NULL, d->dst, NULL, d->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        d->in_pipe -= (size_t)n;
        d->bytes += (uint64_t)n;
        progress = true;
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        dir_fail(d, errno);
        return;
      }
    }
    if (!progress) break;
  }
  if (d->eof && d->in_pipe == 0 && d->head_off == d->head_len) {
    if (shutdown(d->dst, SHUT_WR) < 0 && errno != ENOTCONN) {
      dir_fail(d, errno);
      return;
    }
    d->shut = true;
  }
}

static void pair_close(struct relay_engine *e, struct pair *p, int err) {
  if (p->closed) return;
  p->closed = true;
  for (int i = 0; i < 2; i++) (void)epoll_ctl(e->epfd, EPOLL_CTL_DEL, p->fd[i], NULL);
  if (p->prev) p->prev->next = p->next;
  else if (e->active == p) e->active = p->next;
  if (p->next) p->next->prev = p->prev;
  // Close now (the peers see the end at once); free after the batch, whose later events may still point here.
  for (int i = 0; i < 2; i++) {
    dir_free(&p->d[i]);
    close(p->fd[i]);
    p->fd[i] = -1;
  }
  p->prev = NULL;
  p->next = e->dead;
  e->dead = p;
  atomic_fetch_sub(&e->count, 1);
  e->done(e->ctx, p->id, p->d[0].bytes, p->d[1].bytes, err);
}

static void pair_pump(struct relay_engine *e, struct pair *p) {
  if (p->closed) return;
  for (int i = 0; i < 2; i++) dir_pump(&p->d[i]);
  for (int i = 0; i < 2; i++) {
    if (p->d[i].src_dead && !dir_done(&p->d[1 - i])) dir_fail(&p->d[1 - i], p->d[i].err);
  }
  if (dir_done(&p->d[0]) && dir_done(&p->d[1])) pair_close(e, p, p->d[0].err ? p->d[0].err : p->d[1].err);
}

static void free_dead(struct relay_engine *e) {
  while (e->dead) {
    struct pair *p = e->dead;
    e->dead = p->next;
    free(p);
  }
}

/** Register the pairs handed over since the last time; true when the engine is asked to stop. */
static bool take_incoming(struct relay_engine *e) {
  uint64_t v;
  while (read(e->evfd, &v, sizeof v) > 0) {
  }
  pthread_mutex_lock(&e->lock);
  struct pair *list = e->incoming;
  e->incoming = NULL;
  bool stopping = e->stopping;
  pthread_mutex_unlock(&e->lock);
  while (list) {
    struct pair *p = list;
    list = p->next;
    p->prev = NULL;
    p->next = e->active;
    if (e->active) e->active->prev = p;
    e->active = p;
    int err = 0;
    for (int i = 0; i < 2 && !err; i++) {
      struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = p};
      if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, p->fd[i], &ev) < 0) err = errno;
    }
    if (err) pair_close(e, p, err);
    else pair_pump(e, p); // bytes may be waiting already
  }
  return stopping;
}

static void *worker(void *arg) {
  struct relay_engine *e = arg;
  struct epoll_event evs[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(e->epfd, evs, MAX_EVENTS, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bool stop = false;
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr == NULL) stop = take_incoming(e) || stop;
      else pair_pump(e, evs[i].data.ptr);
    }
    free_dead(e);
    if (stop) break;
  }
  // Stopping (or epoll failed, which leaves nothing to do but give every pair back): close them all.
  for (;;) {
    pthread_mutex_lock(&e->lock);
    e->stopping = true;
    struct pair *list = e->incoming;
    e->incoming = NULL;
    pthread_mutex_unlock(&e->lock);
    if (!list) break;
    while (list) {
      struct pair *p = list;
      list = p->next;
      p->prev = NULL;
      p->next = e->active;
      if (e->active) e->active->prev = p;
      e->active = p;
    }
  }
  while (e->active) pair_close(e, e->active, ECANCELED);
  free_dead(e);
  return NULL;
}

struct relay_engine *relay_engine_start(relay_done_fn done, void *ctx, int *err) {
  struct relay_engine *e = calloc(1, sizeof *e);
  if (!e) {
    *err = ENOMEM;
    return NULL;
  }
  e->done = done;
  e->ctx = ctx;
  e->epfd = epoll_create1(EPOLL_CLOEXEC);
  e->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (e->epfd < 0 || e->evfd < 0) {
    *err = errno;
    goto fail;
  }
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->evfd, &ev) < 0) {
    *err = errno;
    goto fail;
  }
  pthread_mutex_init(&e->lock, NULL);
  int r = pthread_create(&e->thread, NULL, worker, e);
  if (r != 0) {
    pthread_mutex_destroy(&e->lock);
    *err = r;
    goto fail;
  }
  (void)pthread_setname_np(e->thread, "burrow-relay"); // what ps -T and /proc/<pid>/task/*/comm show
  return e;
fail:
  if (e->epfd >= 0) close(e->epfd);
  if (e->evfd >= 0) close(e->evfd);
  free(e);
  return NULL;
}

/**
 * A peer that vanishes without a word (a killed sandbox's network namespace is simply gone) must not hold a pair,
 * its descriptors and pipes, for as long as the other side stays quiet: probes after a minute idle, dead after two.
 */
static void keepalive(int fd) {
  int on = 1, idle = 60, interval = 10, count = 6;
  (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

int relay_engine_add(struct relay_engine *e, uint64_t id, int fd_a, int fd_b, const void *head_to_b, size_t head_to_b_len,
                     const void *head_to_a, size_t head_to_a_len) {
  struct pair *p = calloc(1, sizeof *p);
  if (!p) return -ENOMEM;
  p->id = id;
  p->fd[0] = p->fd[1] = -1;
  p->d[0].pipe_r = p->d[0].pipe_w = p->d[1].pipe_r = p->d[1].pipe_w = -1;
  int err = 0;
  int src[2] = {fd_a, fd_b};
  for (int i = 0; i < 2 && !err; i++) {
    p->fd[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 0);
    if (p->fd[i] < 0) err = -errno;
    // Shared with the caller's descriptor, which is about to be closed: the thread must never block on it.
    else if (fcntl(p->fd[i], F_SETFL, fcntl(p->fd[i], F_GETFL) | O_NONBLOCK) < 0) err = -errno;
    else keepalive(p->fd[i]);
  }
  if (!err) err = dir_init(&p->d[0], p->fd[0], p->fd[1], head_to_b, head_to_b_len);
  if (!err) err = dir_init(&p->d[1], p->fd[1], p->fd[0], head_to_a, head_to_a_len);
  if (!err) {
    pthread_mutex_lock(&e->lock);
    if (e->stopping) err = -ESHUTDOWN;
    else {
      // The heads (a request the proxy read while judging it) go out from the caller's thread now, not after the
      // worker wakes up: a short request's round trip does not wait for a thread switch. What cannot go now, the
      // worker sends. Here, where nothing can fail any more (the caller would send the heads again) and before the
      // worker can see the pair.
      for (int i = 0; i < 2; i++) {
        struct dir *d = &p->d[i];
        if (d->head_len == 0) continue;
        ssize_t n = send(d->dst, d->head, d->head_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          d->head_off = (size_t)n;
          d->bytes += (uint64_t)n;
        }
      }
      p->next = e->incoming;
      e->incoming = p;
      atomic_fetch_add(&e->count, 1);
    }
    pthread_mutex_unlock(&e->lock);
  }
  if (err) {
    pair_free(p);
    return err;
  }
  uint64_t one = 1;
  // Cannot fail short of a counter overflow; the thread drains it on every wake-up.
  (void)!write(e->evfd, &one, sizeof one);
  return 0;
}

size_t relay_engine_active(const struct relay_engine *e) {
  return atomic_load(&((struct relay_engine *)e)->count);
}

void relay_engine_stop(struct relay_engine *e) {
  pthread_mutex_lock(&e->lock);
  e->stopping = true;
  pthread_mutex_unlock(&e->lock);
  uint64_t one = 1;
  (void)!write(e->evfd, &one, sizeof one);
  pthread_join(e->thread, NULL);
  pthread_mutex_destroy(&e->lock);
  close(e->epfd);
  close(e->evfd);
  free(e);
}
