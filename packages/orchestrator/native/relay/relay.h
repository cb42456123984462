// The splice relay engine (relay.c): one worker thread that moves the bytes of many TCP connection pairs with
// splice(2) through a pipe per direction, so they never enter user space. The N-API binding is addon.c.
#ifndef BURROW_RELAY_H
#define BURROW_RELAY_H

#include <stddef.h>
#include <stdint.h>

struct relay_engine;

/**
 * Called on the worker thread once per pair, when both directions are done or on the first error (err is then a
 * positive errno; ECANCELED when relay_engine_stop closed it). a_to_b and b_to_a count the bytes delivered.
 */
typedef void (*relay_done_fn)(void *ctx, uint64_t id, uint64_t a_to_b, uint64_t b_to_a, int err);

/** A running engine, or NULL with *err set. */
struct relay_engine *relay_engine_start(relay_done_fn done, void *ctx, int *err);

/**
 * Relay connected sockets fd_a and fd_b (dup'ed here: the caller may close its own descriptors right after). The
 * heads are bytes already read from one side that go to the other first (copied). Returns 0 or a negative errno.
 */
int relay_engine_add(struct relay_engine *e, uint64_t id, int fd_a, int fd_b, const void *head_to_b, size_t head_to_b_len,
                     const void *head_to_a, size_t head_to_a_len);

/** Pairs being relayed now. */
size_t relay_engine_active(const struct relay_engine *e);

/** Close every pair (each reported with ECANCELED), stop and join the worker, free everything. */
void relay_engine_stop(struct relay_engine *e);

#endif
