/* memprof-ci: the OCAMLMEMPROF syntax.
 *
 * 1. One strict rule, so that a typo is an error and never a different
 *    setting. The value is empty (the same as unset) or a list of
 *    `key=value` items separated by single commas: no empty item, no
 *    leading or trailing comma, no whitespace outside a path, each key
 *    at most once, keys from this set:
 *      seed=N     N plain decimal digits, 0 to 2^64-1
 *      rate=R     R matching [0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?, its
 *                 value greater than 0 and at most 1 (no sign, no
 *                 leading dot, no hex, inf or nan; a value that
 *                 underflows is an error); switches the tracker on
 *      frames=N   N plain decimal digits, 1 to CAML_MEMPROF_MAX_FRAMES
 *      out=PATH   non-empty, no control character, no space at either
 *                 end (spaces inside are kept; bytes above 0x7f are
 *                 allowed); `%p` is the pid, `%%` a percent sign and
 *                 `%,` a comma, any other `%` is an error. Items are
 *                 split at the commas that no `%` escapes.
 *      trace=PATH the same as out=, for the memtrace CTF trace
 *                 (memprof_ctf.c); given without out=, no profile is
 *                 written, only the trace
 *      live=walk|gc|off
 *                 how the blocks live at exit are told from the dead:
 *                 walk (the default) by what the roots reach, gc by
 *                 two major cycles; off does not tell them apart (no
 *                 work at exit that grows with the heap)
 *      points=on|off
 *                 on: exact counts per allocation point, from the
 *                 site ids in the blocks' headers (memprof_points.c);
 *                 off (the default) counts none
 *      stacks=full|site
 *                 full (the default) keeps each sample's callstack
 *                 prefix of `frames` slots; site cuts it after the
 *                 innermost slot outside the standard library
 *                 (memprof_tracker.c, design 8)
 *      stackmem=N N plain decimal digits, optionally followed by k, M or
 *                 G (times 2^10, 2^20, 2^30), at most 2^40: the bytes
 *                 of whole stacks the tracker keeps; a new stack beyond
 *                 them keeps only its site's slots (memprof_tracker.c,
 *                 design 9). The default is CAML_MEMPROF_DEFAULT_STACKMEM
 *      snapshot=WHEN
 *                 WHEN is one or more of exit, signal and call, joined
 *                 by `+` (each at most once, in any order): a heap
 *                 snapshot with retainer paths in the profile at exit,
 *                 one written on each SIGUSR1, one on each call of the
 *                 program to caml_memprof_ci_snapshot
 *                 (memprof_snapshot.c; memprof_tracker.c, design 10)
 *      snapshot_sites=N
 *                 N plain decimal digits, 1 to
 *                 CAML_MEMPROF_MAX_SNAPSHOT_SITES: how many sites get a
 *                 retainer path (CAML_MEMPROF_DEFAULT_SNAPSHOT_SITES
 *                 by default); needs snapshot
 *      snapshot_mem=N
 *                 bytes as for stackmem: the most the snapshot's tables
 *                 may hold (memprof_snapshot.c, design 3); past it the
 *                 snapshot is not taken, with the reason, and the exit
 *                 judges liveness without it.
 *                 CAML_MEMPROF_DEFAULT_SNAPSHOT_MEM by default; needs
 *                 snapshot
 *      snapshot_out=PATH
 *                 as out=, where the snapshots taken on a signal or a
 *                 call go; `%n` is also allowed, the snapshot's number
 *                 (1, 2, ...). CAML_MEMPROF_DEFAULT_SNAPSHOT_OUT by
 *                 default; needs snapshot
 *      stop=N     N plain decimal digits, 1 to 2^62: the program stops
 *                 at the first safe point after its N-th minor
 *                 collection, with exit status 0 and the profile
 *                 written as at exit (memprof_stop.c); allowed without
 *                 rate, so that a run with the tracker off stops at the
 *                 same place
 *    Every key but `seed` and `stop` needs `rate`. The first `=` of an
 *    item ends its key; later ones belong to the value (out=a=b is
 *    "a=b").
 * 2. Pure: only the C library, no runtime global, no allocation, no
 *    exit. The setting is cut up in place and `out` points into it.
 *    strtod converts a rate only after the syntax above has been
 *    checked, so its own leniency (leading whitespace, hex, inf) never
 *    applies. It uses the process's locale: "C" for an OCaml program,
 *    whose main never calls setlocale before the runtime parses
 *    (memprof_env.c); a C main that sets a locale with a decimal comma
 *    first would see plain rates like 0.5 rejected, never misread.
 * 3. Errors: the first problem found, as one line of printable ASCII
 *    naming OCAMLMEMPROF and the key and value (or the whole setting,
 *    for an empty item). Echoed pieces are escaped: printable ASCII
 *    stays, a backslash is doubled, any other byte is shown as \xHH
 *    (a newline as \x0a, ESC as \x1b), so a value can neither end the
 *    line nor drive the terminal; each echoed piece is cut after
 *    CAML_MEMPROF_ENV_ECHO_MAX characters, with `...`, so the message
 *    always fits in CAML_MEMPROF_ENV_MSG_SIZE bytes.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_env_parse.h"

#define KEYS "(keys: seed, rate, frames, out, trace, live, points, stacks, " \
  "stackmem, snapshot, snapshot_sites, snapshot_mem, snapshot_out, stop)"
#define STRINGIFY(x) #x
#define DECIMAL(x) STRINGIFY(x)

/**** Messages ****/

/* A message being built in the caller's buffer: always terminated,
 * silently cut when full (which the sizes in the header rule out). */
struct msg { char *s; size_t cap, len; };

static void msg_add(struct msg *m, const char *s, size_t n)
{
  for (size_t i = 0; i < n && m->len + 1 < m->cap; i++) m->s[m->len++] = s[i];
  if (m->cap > 0) m->s[m->len] = '\0';
}

static void msg_lit(struct msg *m, const char *s)
{
  msg_add(m, s, strlen(s));
}

/* `s` escaped (design 3): at most CAML_MEMPROF_ENV_ECHO_MAX characters,
 * then `...` if anything was left out. */
static void msg_escaped(struct msg *m, const char *s)
{
  static const char hex[] = "0123456789abcdef";
  char e[CAML_MEMPROF_ENV_ECHO_MAX + 3];
  size_t n = 0;
  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    char one[4];
    size_t k;
    if (c == '\\') {
      one[0] = '\\'; one[1] = '\\'; k = 2;
    } else if (c >= 0x20 && c < 0x7f) {
      one[0] = (char)c; k = 1;
    } else {
      one[0] = '\\'; one[1] = 'x'; one[2] = hex[c >> 4]; one[3] = hex[c & 15];
      k = 4;
    }
    if (n + k > CAML_MEMPROF_ENV_ECHO_MAX) {
      memcpy(e + n, "...", 3);
      n += 3;
      break;
    }
    memcpy(e + n, one, k);
    n += k;
  }
  msg_add(m, e, n);
}

static bool bad_value(struct msg *m, const char *key, const char *val,
                      const char *what)
{
  msg_lit(m, CAML_MEMPROF_ENV_VAR ": invalid value '");
  msg_escaped(m, val);
  msg_lit(m, "' for key '");
  msg_escaped(m, key);
  msg_lit(m, "': ");
  msg_lit(m, what);
  return false;
}

/**** Values ****/

static size_t count_digits(const char *s)
{
  size_t n = 0;
  while (s[n] >= '0' && s[n] <= '9') n++;
  return n;
}

/* Plain decimal digits, at most `max`. */
static bool parse_uint(const char *val, uint64_t max, uint64_t *res)
{
  size_t n = count_digits(val);
  if (n == 0 || val[n] != '\0') return false;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t d = (uint64_t)(val[i] - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *res = v;
  return true;
}

/* [0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)? and nothing else. */
static bool plain_decimal(const char *s)
{
  size_t n = count_digits(s);
  if (n == 0) return false;
  s += n;
  if (*s == '.') s += 1 + count_digits(s + 1);
  if (*s == 'e' || *s == 'E') {
    s++;
    if (*s == '+' || *s == '-') s++;
    n = count_digits(s);
    if (n == 0) return false;
    s += n;
  }
  return *s == '\0';
}

static bool parse_seed(struct msg *m, const char *val,
                       struct caml_memprof_env *env)
{
  if (!parse_uint(val, UINT64_MAX, &env->seed)) {
    return bad_value(m, "seed", val, "expected an unsigned 64-bit integer "
                     "in plain decimal digits (0 to 18446744073709551615)");
  }
  env->seeded = true;
  return true;
}

static bool parse_rate(struct msg *m, const char *val,
                       struct caml_memprof_env *env)
{
  const char *what = "expected a decimal number greater than 0 and at "
                     "most 1, e.g. rate=1e-4 or rate=0.001";
  if (!plain_decimal(val)) return bad_value(m, "rate", val, what);
  errno = 0;
  char *end;
  double r = strtod(val, &end);
  if (errno == ERANGE || *end != '\0' || !isfinite(r) || !(r > 0.0)
      || r > 1.0) {
    return bad_value(m, "rate", val, what);
  }
  env->rate = r;
  env->tracking = true;
  return true;
}

static bool parse_stop(struct msg *m, const char *val,
                       struct caml_memprof_env *env)
{
  uint64_t n;
  if (!parse_uint(val, (uint64_t)1 << 62, &n) || n < 1) {
    return bad_value(m, "stop", val, "expected a count of minor collections "
                     "from 1 to 4611686018427387904 in plain decimal digits");
  }
  env->stop = n;
  return true;
}

static bool parse_frames(struct msg *m, const char *val,
                         struct caml_memprof_env *env)
{
  uint64_t n;
  if (!parse_uint(val, CAML_MEMPROF_MAX_FRAMES, &n) || n < 1) {
    return bad_value(m, "frames", val, "expected an integer from 1 to "
                     DECIMAL(CAML_MEMPROF_MAX_FRAMES)
                     " in plain decimal digits");
  }
  env->frames = (int)n;
  return true;
}

/* A path template of `key` (out, trace, snapshot_out; only the last
 * takes %n): design 1. */
static bool check_path(struct msg *m, const char *key, const char *val)
{
  bool numbered = strcmp(key, "snapshot_out") == 0;
  size_t len = strlen(val);
  if (len == 0) return bad_value(m, key, val, "expected a file path");
  if (val[0] == ' ' || val[len - 1] == ' ') {
    return bad_value(m, key, val, "a path cannot start or end with a "
                     "space");
  }
  for (const char *p = val; *p != '\0'; p++) {
    unsigned char c = (unsigned char)*p;
    if (c < ' ' || c == 0x7f) {
      return bad_value(m, key, val, "a path with a control character "
                       "cannot be given");
    }
    if (c == '%') {
      if (p[1] != 'p' && p[1] != '%' && p[1] != ','
          && !(numbered && p[1] == 'n')) {
        return bad_value(m, key, val, numbered
                         ? "only %p (the pid), %n (the snapshot's number), "
                           "%% and %, may follow a percent sign"
                         : "only %p (the pid), %% and %, may "
                           "follow a percent sign");
      }
      p++;
    }
  }
  return true;
}

static bool parse_out(struct msg *m, const char *val,
                      struct caml_memprof_env *env)
{
  if (!check_path(m, "out", val)) return false;
  env->out = val;
  return true;
}

static bool parse_trace(struct msg *m, const char *val,
                        struct caml_memprof_env *env)
{
  if (!check_path(m, "trace", val)) return false;
  env->trace = val;
  return true;
}

/* A key with two values: `no` sets *flag false, `yes` sets it true;
 * `what` is the message for any other value. */
static bool parse_choice(struct msg *m, const char *key, const char *val,
                         const char *no, const char *yes, const char *what,
                         bool *flag)
{
  if (strcmp(val, no) == 0) *flag = false;
  else if (strcmp(val, yes) == 0) *flag = true;
  else return bad_value(m, key, val, what);
  return true;
}

const char *const caml_memprof_live_names[3] = { "walk", "gc", "off" };

static bool parse_live(struct msg *m, const char *val,
                       struct caml_memprof_env *env)
{
  for (int i = 0; i < 3; i++) {
    if (strcmp(val, caml_memprof_live_names[i]) == 0) {
      env->live = (enum caml_memprof_live)i;
      return true;
    }
  }
  return bad_value(m, "live", val, "expected walk (the default), gc or off");
}

static bool parse_points(struct msg *m, const char *val,
                         struct caml_memprof_env *env)
{
  return parse_choice(m, "points", val, "off", "on",
                      "expected on or off (the default)", &env->points);
}

static bool parse_stacks(struct msg *m, const char *val,
                         struct caml_memprof_env *env)
{
  return parse_choice(m, "stacks", val, "full", "site",
                      "expected full (the default) or site",
                      &env->stacks_at_site);
}

/* A number of bytes: plain decimal digits, optionally followed by k, M
 * or G, at most 2^40. */
static bool parse_bytes(struct msg *m, const char *key, const char *val,
                        uint64_t *res)
{
  size_t n = count_digits(val);
  unsigned shift = 0;
  if (n > 0 && val[n] != '\0' && val[n + 1] == '\0') {
    shift = val[n] == 'k' ? 10 : val[n] == 'M' ? 20 : val[n] == 'G' ? 30 : 64;
  }
  char digits[32];
  uint64_t v;
  if (n == 0 || n >= sizeof digits || shift == 64
      || (val[n] != '\0' && shift == 0)) {
    return bad_value(m, key, val, "expected a number of bytes in "
                     "plain decimal digits, optionally followed by k, M or G");
  }
  memcpy(digits, val, n);
  digits[n] = '\0';
  if (!parse_uint(digits, (uint64_t)1 << (40 - shift), &v)) {
    return bad_value(m, key, val, "expected at most 2^40 bytes (1024G)");
  }
  *res = v << shift;
  return true;
}

static bool parse_stackmem(struct msg *m, const char *val,
                           struct caml_memprof_env *env)
{
  return parse_bytes(m, "stackmem", val, &env->stackmem);
}

static bool parse_snapshot_mem(struct msg *m, const char *val,
                               struct caml_memprof_env *env)
{
  return parse_bytes(m, "snapshot_mem", val, &env->snapshot_mem);
}

static bool parse_snapshot_out(struct msg *m, const char *val,
                               struct caml_memprof_env *env)
{
  if (!check_path(m, "snapshot_out", val)) return false;
  env->snapshot_out = val;
  return true;
}

/* exit, signal and call joined by `+`, each at most once. */
static bool parse_snapshot(struct msg *m, const char *val,
                           struct caml_memprof_env *env)
{
  static const char *const names[] = { "exit", "signal", "call" };
  bool seen[3] = { false, false, false };
  const char *p = val;
  while (1) {
    size_t len = strcspn(p, "+");
    int i = 0;
    while (i < 3 && !(strlen(names[i]) == len
                      && strncmp(p, names[i], len) == 0)) i++;
    if (i == 3 || seen[i]) {
      return bad_value(m, "snapshot", val, "expected exit, signal or call, "
                       "or several joined by + (each once)");
    }
    seen[i] = true;
    if (p[len] == '\0') break;
    p += len + 1;
  }
  env->snapshot_at_exit = seen[0];
  env->snapshot_on_signal = seen[1];
  env->snapshot_on_call = seen[2];
  return true;
}

static bool parse_snapshot_sites(struct msg *m, const char *val,
                                 struct caml_memprof_env *env)
{
  uint64_t n;
  if (!parse_uint(val, CAML_MEMPROF_MAX_SNAPSHOT_SITES, &n) || n < 1) {
    return bad_value(m, "snapshot_sites", val,
                     "expected an integer from 1 to "
                     DECIMAL(CAML_MEMPROF_MAX_SNAPSHOT_SITES));
  }
  env->snapshot_sites = (int)n;
  return true;
}

/**** The setting ****/

typedef bool (*value_parser)(struct msg *, const char *,
                             struct caml_memprof_env *);

static const struct { const char *key; value_parser parse; } keys[] = {
  { "seed", parse_seed }, { "rate", parse_rate }, { "frames", parse_frames },
  { "out", parse_out }, { "live", parse_live }, { "trace", parse_trace },
  { "stacks", parse_stacks }, { "stackmem", parse_stackmem },
  { "snapshot", parse_snapshot }, { "snapshot_sites", parse_snapshot_sites },
  { "snapshot_mem", parse_snapshot_mem },
  { "snapshot_out", parse_snapshot_out }, { "points", parse_points },
  { "stop", parse_stop },
};
enum { K_SEED, K_RATE, K_FRAMES, K_OUT, K_LIVE, K_TRACE, K_STACKS,
       K_STACKMEM, K_SNAPSHOT, K_SNAPSHOT_SITES, K_SNAPSHOT_MEM,
       K_SNAPSHOT_OUT, K_POINTS, K_STOP, N_KEYS };

void caml_memprof_env_init(struct caml_memprof_env *env)
{
  env->seeded = false;
  env->seed = 0;
  env->tracking = false;
  env->rate = 0.0;
  env->frames = CAML_MEMPROF_DEFAULT_FRAMES;
  env->out = CAML_MEMPROF_DEFAULT_OUT;
  env->live = CAML_MEMPROF_LIVE_WALK;
  env->points = false;
  env->trace = NULL;
  env->stacks_at_site = false;
  env->stackmem = CAML_MEMPROF_DEFAULT_STACKMEM;
  env->snapshot_at_exit = false;
  env->snapshot_on_signal = false;
  env->snapshot_on_call = false;
  env->snapshot_out = CAML_MEMPROF_DEFAULT_SNAPSHOT_OUT;
  env->snapshot_sites = CAML_MEMPROF_DEFAULT_SNAPSHOT_SITES;
  env->snapshot_mem = CAML_MEMPROF_DEFAULT_SNAPSHOT_MEM;
  env->stop = 0;
}

/* The end of the item at `p`: its separating comma, or the end of the
 * setting. A `%` escapes the byte after it (design 1). */
static char *item_end(char *p)
{
  while (*p != '\0' && *p != ',') p += (p[0] == '%' && p[1] != '\0') ? 2 : 1;
  return p;
}

static bool has_empty_item(char *spec)
{
  for (char *item = spec;; item++) {
    char *end = item_end(item);
    if (end == item) return true;
    if (*end == '\0') return false;
    item = end;
  }
}

bool caml_memprof_env_parse(char *spec, struct caml_memprof_env *env,
                            char *msg, size_t msg_size)
{
  struct msg m = { msg, msg_size, 0 };
  msg_add(&m, "", 0);
  if (*spec == '\0') return true;
  if (has_empty_item(spec)) {
    msg_lit(&m, CAML_MEMPROF_ENV_VAR ": invalid setting '");
    msg_escaped(&m, spec);
    msg_lit(&m, "': empty item (expected key=value items separated by "
            "single commas)");
    return false;
  }

  const char *vals[N_KEYS] = { NULL };
  for (char *item = spec, *next; item != NULL; item = next) {
    char *comma = item_end(item);
    next = NULL;
    if (*comma == ',') { *comma = '\0'; next = comma + 1; }
    char *eq = strchr(item, '=');
    if (eq == NULL) {
      msg_lit(&m, CAML_MEMPROF_ENV_VAR ": invalid item '");
      msg_escaped(&m, item);
      msg_lit(&m, "': expected key=value " KEYS);
      return false;
    }
    *eq = '\0';
    const char *key = item, *val = eq + 1;
    int k = 0;
    while (k < N_KEYS && strcmp(keys[k].key, key) != 0) k++;
    if (k == N_KEYS) return bad_value(&m, key, val, "unknown key " KEYS);
    if (vals[k] != NULL) return bad_value(&m, key, val, "key given twice");
    vals[k] = val;
    if (!keys[k].parse(&m, val, env)) return false;
  }

  if (vals[K_RATE] == NULL) {
    int k = 0;
    while (k < N_KEYS
           && (k == K_SEED || k == K_RATE || k == K_STOP || vals[k] == NULL))
      k++;
    if (k != N_KEYS) {
      return bad_value(&m, keys[k].key, vals[k],
                       "has no effect without rate=, which starts the "
                       "tracker");
    }
  }
  for (int k = K_SNAPSHOT_SITES; k <= K_SNAPSHOT_OUT; k++) {
    if (vals[k] != NULL && vals[K_SNAPSHOT] == NULL) {
      return bad_value(&m, keys[k].key, vals[k],
                       "has no effect without snapshot=");
    }
  }
  if (vals[K_TRACE] != NULL && vals[K_OUT] == NULL) env->out = NULL;
  return true;
}
