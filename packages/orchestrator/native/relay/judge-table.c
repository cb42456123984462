// A hash of (saddr, daddr) pairs, each on a list from the least to the most recently allowed so the oldest can go
// when the table is full; a pair's names are few (at most 64) and looked through in order.
#include "judge-table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 16384

struct entry {
  uint64_t expires;
  char name[];
};

struct pair {
  uint32_t saddr, daddr;
  struct pair *hnext;         // bucket chain
  struct pair *older, *newer; // age list
  size_t count;
  struct entry *names[JUDGE_TABLE_NAMES]; // oldest first
};

struct judge_table {
  struct pair *buckets[BUCKETS];
  struct pair *oldest, *newest;
  size_t pairs;
};

static size_t bucket(uint32_t saddr, uint32_t daddr) {
  uint64_t h = ((uint64_t)saddr << 32 | daddr) * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 50) % BUCKETS;
}

struct judge_table *judge_table_new(void) { return calloc(1, sizeof(struct judge_table)); }

static void unlink_age(struct judge_table *t, struct pair *p) {
  if (p->older) p->older->newer = p->newer;
  else t->oldest = p->newer;
  if (p->newer) p->newer->older = p->older;
  else t->newest = p->older;
  p->older = p->newer = NULL;
}

static void push_newest(struct judge_table *t, struct pair *p) {
  p->older = t->newest;
  p->newer = NULL;
  if (t->newest) t->newest->newer = p;
  else t->oldest = p;
  t->newest = p;
}

static void drop_pair(struct judge_table *t, struct pair *p) {
  struct pair **pp = &t->buckets[bucket(p->saddr, p->daddr)];
  while (*pp != p) pp = &(*pp)->hnext;
  *pp = p->hnext;
  unlink_age(t, p);
  for (size_t i = 0; i < p->count; i++) free(p->names[i]);
  free(p);
  t->pairs--;
}

void judge_table_free(struct judge_table *t) {
  if (!t) return;
  while (t->oldest) drop_pair(t, t->oldest);
  free(t);
}

static struct pair *find(struct judge_table *t, uint32_t saddr, uint32_t daddr) {
  for (struct pair *p = t->buckets[bucket(saddr, daddr)]; p; p = p->hnext)
    if (p->saddr == saddr && p->daddr == daddr) return p;
  return NULL;
}

static void remove_name(struct pair *p, size_t i) {
  free(p->names[i]);
  memmove(&p->names[i], &p->names[i + 1], (p->count - i - 1) * sizeof p->names[0]);
  p->count--;
}

int judge_table_allow(struct judge_table *t, uint32_t saddr, uint32_t daddr, const char *name, uint64_t expires) {
  struct pair *p = find(t, saddr, daddr);
  if (!p) {
    if (t->pairs >= JUDGE_TABLE_PAIRS) drop_pair(t, t->oldest);
    p = calloc(1, sizeof *p);
    if (!p) return -ENOMEM;
    p->saddr = saddr;
    p->daddr = daddr;
    size_t b = bucket(saddr, daddr);
    p->hnext = t->buckets[b];
    t->buckets[b] = p;
    t->pairs++;
  } else {
    unlink_age(t, p);
  }
  push_newest(t, p);
  for (size_t i = 0; i < p->count; i++)
    if (strcmp(p->names[i]->name, name) == 0) {
      if (p->names[i]->expires > expires) expires = p->names[i]->expires;
      remove_name(p, i);
      break;
    }
  if (p->count == JUDGE_TABLE_NAMES) remove_name(p, 0);
  size_t len = strlen(name);
  struct entry *e = malloc(sizeof *e + len + 1);
  if (!e) return -ENOMEM;
  e->expires = expires;
  memcpy(e->name, name, len + 1);
  p->names[p->count++] = e;
  return 0;
}

bool judge_table_has(struct judge_table *t, uint32_t saddr, uint32_t daddr, const char *name, uint64_t now) {
  struct pair *p = find(t, saddr, daddr);
  if (!p) return false;
  for (size_t i = 0; i < p->count; i++)
    if (strcmp(p->names[i]->name, name) == 0) return p->names[i]->expires > now;
  return false;
}

void judge_table_forget(struct judge_table *t, uint32_t saddr) {
  for (struct pair *p = t->oldest, *next; p; p = next) {
    next = p->newer;
    if (p->saddr == saddr) drop_pair(t, p);
  }
}
