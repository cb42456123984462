/* Command line of burrow-sandbox. Paths end up in the overlay option string, where ',' ':' and
 * '\' are separators or escapes, so they are refused instead of being misparsed by the kernel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

static const char DEFAULT_PATH[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

int parse_ulong(const char *s, unsigned long *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || *s == 0 || *end != 0 || s[0] == '-') return -1;
  *out = v;
  return 0;
}

int bad_path(const char *p) { return p[0] != '/' || strpbrk(p, ",:\\") != NULL; }

/* 8-4-4-4-12 lower-case hex digits, as the kernel prints its own boot id. */
static int bad_boot_id(const char *v) {
  if (strlen(v) != 36) return 1;
  for (int k = 0; k < 36; k++) {
    int dash = k == 8 || k == 13 || k == 18 || k == 23;
    if (dash ? v[k] != '-' : !((v[k] >= '0' && v[k] <= '9') || (v[k] >= 'a' && v[k] <= 'f'))) return 1;
  }
  return 0;
}

int parse_args(int argc, char **argv, struct config *cfg, char *err, size_t errlen) {
  memset(cfg, 0, sizeof *cfg);
  cfg->uid_count = 65536;
  cfg->grace_ms = 2000;
  int owner_count_given = 0;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "--no-new-privs") == 0) {
      cfg->no_new_privs = 1;
      continue;
    }
    if (i + 1 >= argc) {
      snprintf(err, errlen, "%s needs a value", a);
      return -1;
    }
    const char *v = argv[++i];
    int net = parse_net_option(a, v, &cfg->net, err, errlen);
    if (net < 0) return -1;
    if (net) continue;
    if (strcmp(a, "--lower") == 0) {
      if (cfg->n_lower == MAX_LOWER) return snprintf(err, errlen, "too many --lower"), -1;
      cfg->lower[cfg->n_lower++] = v;
    } else if (strcmp(a, "--upper") == 0) cfg->upper = v;
    else if (strcmp(a, "--work") == 0) cfg->work = v;
    else if (strcmp(a, "--merged") == 0) cfg->merged = v;
    else if (strcmp(a, "--runtime") == 0) cfg->runtime = v;
    else if (strcmp(a, "--hostname") == 0) cfg->hostname = v;
    else if (strcmp(a, "--log") == 0) cfg->log_path = v;
    else if (strcmp(a, "--boot-id") == 0) {
      if (bad_boot_id(v)) return snprintf(err, errlen, "bad --boot-id %s (a lower-case UUID)", v), -1;
      cfg->boot_id = v;
    }
    else if (strcmp(a, "--cgroup") == 0) {
      if (cfg->n_cgroups == MAX_CGROUPS) return snprintf(err, errlen, "too many --cgroup"), -1;
      cfg->cgroups[cfg->n_cgroups++] = v;
    } else if (strcmp(a, "--volume") == 0) {
      if (parse_volume(v, cfg, err, errlen)) return -1;
    } else if (strcmp(a, "--env") == 0) {
      if (cfg->n_env == MAX_ENV) return snprintf(err, errlen, "too many --env"), -1;
      if (strchr(v, '=') == NULL || v[0] == '=') return snprintf(err, errlen, "--env wants K=V, got %s", v), -1;
      cfg->env[cfg->n_env++] = v;
    } else if (strcmp(a, "--uid-base") == 0) {
      if (parse_ulong(v, &cfg->uid_base)) return snprintf(err, errlen, "bad --uid-base %s", v), -1;
    } else if (strcmp(a, "--uid-count") == 0) {
      if (parse_ulong(v, &cfg->uid_count)) return snprintf(err, errlen, "bad --uid-count %s", v), -1;
    } else if (strcmp(a, "--owner-base") == 0) {
      if (parse_ulong(v, &cfg->owner_base)) return snprintf(err, errlen, "bad --owner-base %s", v), -1;
    } else if (strcmp(a, "--owner-count") == 0) {
      if (parse_ulong(v, &cfg->owner_count)) return snprintf(err, errlen, "bad --owner-count %s", v), -1;
      owner_count_given = 1;
    } else if (strcmp(a, "--ranges-base") == 0) {
      if (parse_ulong(v, &cfg->ranges_base)) return snprintf(err, errlen, "bad --ranges-base %s", v), -1;
    } else if (strcmp(a, "--grace-ms") == 0) {
      if (parse_ulong(v, &cfg->grace_ms)) return snprintf(err, errlen, "bad --grace-ms %s", v), -1;
    } else {
      snprintf(err, errlen, "unknown option %s", a);
      return -1;
    }
  }
  if (i >= argc) return snprintf(err, errlen, "missing -- CMD"), -1;
  cfg->argv = argv + i;

  if (cfg->n_lower == 0) return snprintf(err, errlen, "need at least one --lower"), -1;
  const char *required[][2] = {{"--upper", cfg->upper}, {"--work", cfg->work}, {"--merged", cfg->merged},
                               {"--runtime", cfg->runtime}, {"--hostname", cfg->hostname}, {"--log", cfg->log_path}};
  for (size_t k = 0; k < sizeof required / sizeof required[0]; k++)
    if (required[k][1] == NULL) return snprintf(err, errlen, "%s is required", required[k][0]), -1;
  for (int k = 0; k < cfg->n_lower; k++)
    if (bad_path(cfg->lower[k])) return snprintf(err, errlen, "bad --lower %s (absolute, no , : \\)", cfg->lower[k]), -1;
  if (bad_path(cfg->upper) || bad_path(cfg->work) || bad_path(cfg->merged))
    return snprintf(err, errlen, "--upper/--work/--merged must be absolute without , : \\"), -1;
  if (cfg->runtime[0] != '/') return snprintf(err, errlen, "--runtime must be absolute"), -1;
  if (check_net_config(&cfg->net, err, errlen)) return -1;
  size_t hl = strlen(cfg->hostname);
  if (hl == 0 || hl > 64) return snprintf(err, errlen, "--hostname must be 1..64 bytes"), -1;
  /* Root must not map onto host root, and the range must fit in 32-bit ids. */
  if (cfg->uid_base == 0 || cfg->uid_count == 0 || cfg->uid_base + cfg->uid_count > 0xFFFFFFFFUL)
    return snprintf(err, errlen, "bad uid range %lu/%lu", cfg->uid_base, cfg->uid_count), -1;
  /* Owners hold every capability over the namespace they own, so they must be host uids nothing
   * else runs as or owns files as: not root, not (uid_t)-1, not the range sandboxes map. */
  if (cfg->owner_base && !owner_count_given) cfg->owner_count = 65536;
  if (cfg->owner_count && (cfg->owner_base == 0 || cfg->owner_base + cfg->owner_count > 0xFFFFFFFFUL ||
                           (cfg->owner_base < cfg->uid_base + cfg->uid_count && cfg->uid_base < cfg->owner_base + cfg->owner_count)))
    return snprintf(err, errlen, "bad owner range %lu/%lu (outside 0, (uid_t)-1 and the uid range)", cfg->owner_base,
                    cfg->owner_count), -1;
  if (cfg->ranges_base) {
    /* One range of uid_count ids per owner, clear of the canonical ids and of the owners. */
    unsigned long end = cfg->ranges_base + cfg->owner_count * cfg->uid_count;
    if (!cfg->owner_count || end > 0xFFFFFFFFUL ||
        (cfg->ranges_base < cfg->uid_base + cfg->uid_count && cfg->uid_base < end) ||
        (cfg->ranges_base < cfg->owner_base + cfg->owner_count && cfg->owner_base < end))
      return snprintf(err, errlen, "bad --ranges-base %lu (needs --owner-base; %lu ranges of %lu must fit below 2^32 clear of the uid and owner ranges)",
                      cfg->ranges_base, cfg->owner_count, cfg->uid_count), -1;
    /* upper and work must sit on one mount, so they are reached through one idmapped parent. */
    const char *us = strrchr(cfg->upper, '/'), *ws = strrchr(cfg->work, '/');
    if (us - cfg->upper != ws - cfg->work || strncmp(cfg->upper, cfg->work, (size_t)(us - cfg->upper)) || !us[1] || !ws[1])
      return snprintf(err, errlen, "with --ranges-base, --upper and --work must be siblings"), -1;
  }

  /* A clean environment: only what the caller passed, plus a PATH so execvp finds things. */
  int has_path = 0;
  for (int k = 0; k < cfg->n_env; k++)
    if (strncmp(cfg->env[k], "PATH=", 5) == 0) has_path = 1;
  int n = cfg->n_env;
  if (!has_path) cfg->env[n++] = DEFAULT_PATH;
  cfg->env[n] = NULL;
  return 0;
}
