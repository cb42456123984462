// The egress judge's table of allowed names (judge-table.c): which names a sandbox address may reach a destination
// address under, each until it expires. Bounded (JUDGE_TABLE_NAMES per pair, JUDGE_TABLE_PAIRS pairs; the oldest go
// first) because the resolver fills it with whatever the sandboxes look up. Not thread-safe: judge.c locks.
#ifndef BURROW_JUDGE_TABLE_H
#define BURROW_JUDGE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JUDGE_TABLE_NAMES 64
#define JUDGE_TABLE_PAIRS 65536

struct judge_table;

struct judge_table *judge_table_new(void);
void judge_table_free(struct judge_table *t);

/** saddr may reach daddr under name until `expires` (ms, CLOCK_MONOTONIC). 0 or -ENOMEM. */
int judge_table_allow(struct judge_table *t, uint32_t saddr, uint32_t daddr, const char *name, uint64_t expires);

/** Whether saddr may reach daddr under name at `now`. */
bool judge_table_has(struct judge_table *t, uint32_t saddr, uint32_t daddr, const char *name, uint64_t now);

/** Drop every pair of saddr. */
void judge_table_forget(struct judge_table *t, uint32_t saddr);

#endif
