/* memprof-ci: a libFuzzer target for the OCAMLMEMPROF parser.
 *
 * 1. Built by `make fuzz-env` (clang -fsanitize=fuzzer,address,undefined)
 *    from this file and runtime-patch/src/memprof_env_parse.c alone:
 *    the parser uses nothing of the runtime.
 * 2. Each input is one value of the variable. An environment variable
 *    cannot hold a NUL byte, so the input stops at the first one.
 * 3. Besides the sanitizers' checks, every run asserts the parser's
 *    promises (memprof_env_parse.c, design 1 and 3):
 *    - success: the rate is finite and in (0, 1] when tracking, the
 *      defaults hold otherwise, frames is in 1..4096, stackmem at
 *      most 2^40, snapshot_sites in 1..1000 and snapshot_mem at most
 *      2^40, both at their defaults without snapshot (as are the
 *      signal and call flags and snapshot_out), `out` is a
 *      non-empty path without a control character, a space at either
 *      end or a comma that no `%` escapes, either the default or
 *      inside the setting (or absent, only when `trace` is given),
 *      `trace` is such a path inside the setting or absent,
 *      `snapshot_out` such a path (where %n may also follow a `%`),
 *      the default or inside the setting, and the
 *      setting had no control byte, no whitespace but the paths'
 *      spaces and no empty item (items split at unescaped commas); the
 *      values, written back as a setting and parsed again, give the
 *      same result.
 *    - failure: the message is one line of printable ASCII that
 *      starts with "OCAMLMEMPROF: " and fits its buffer.
 *    A broken promise aborts with the reason, which libFuzzer reports
 *    as a crash and saves the input.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_env_parse.h"

#define PREFIX CAML_MEMPROF_ENV_VAR ": "

static void check(bool ok, const char *what, const char *spec)
{
  if (ok) return;
  fprintf(stderr, "fuzz_env: broken promise: %s (input of %zu bytes)\n",
          what, strlen(spec));
  abort();
}

static bool same_path(const char *a, const char *b)
{
  return (a == NULL || b == NULL) ? a == b : strcmp(a, b) == 0;
}

static bool same_env(const struct caml_memprof_env *a,
                     const struct caml_memprof_env *b)
{
  return a->seeded == b->seeded && a->seed == b->seed
    && a->tracking == b->tracking && a->rate == b->rate
    && a->frames == b->frames && same_path(a->out, b->out)
    && same_path(a->trace, b->trace) && a->live == b->live
    && a->stacks_at_site == b->stacks_at_site && a->stackmem == b->stackmem
    && a->snapshot_at_exit == b->snapshot_at_exit
    && a->snapshot_on_signal == b->snapshot_on_signal
    && a->snapshot_on_call == b->snapshot_on_call
    && same_path(a->snapshot_out, b->snapshot_out)
    && a->snapshot_sites == b->snapshot_sites
    && a->snapshot_mem == b->snapshot_mem;
}

static bool any_snapshot(const struct caml_memprof_env *env)
{
  return env->snapshot_at_exit || env->snapshot_on_signal
    || env->snapshot_on_call;
}

/* `env` written back as a setting, in canonical form. */
static char *canonical(const struct caml_memprof_env *env)
{
  size_t cap = (env->out ? strlen(env->out) : 0)
    + (env->trace ? strlen(env->trace) : 0)
    + (env->snapshot_out ? strlen(env->snapshot_out) : 0) + 360, n = 0;
  char *s = malloc(cap);
  if (s == NULL) abort();
  s[0] = '\0';
  if (env->seeded) {
    n += snprintf(s + n, cap - n, "seed=%llu,", (unsigned long long)env->seed);
  }
  if (env->tracking) {
    n += snprintf(s + n, cap - n, "rate=%.17g,frames=%d,live=%s,stacks=%s,"
                  "stackmem=%llu,",
                  env->rate, env->frames, caml_memprof_live_names[env->live],
                  env->stacks_at_site ? "site" : "full",
                  (unsigned long long)env->stackmem);
    if (any_snapshot(env)) {
      n += snprintf(s + n, cap - n, "snapshot=%s%s%s%s%s,snapshot_sites=%d,"
                    "snapshot_mem=%llu,snapshot_out=%s,",
                    env->snapshot_on_call ? "call" : "",
                    env->snapshot_on_call && (env->snapshot_at_exit
                                              || env->snapshot_on_signal)
                    ? "+" : "",
                    env->snapshot_at_exit ? "exit" : "",
                    env->snapshot_at_exit && env->snapshot_on_signal ? "+" : "",
                    env->snapshot_on_signal ? "signal" : "",
                    env->snapshot_sites, (unsigned long long)env->snapshot_mem,
                    env->snapshot_out);
    }
    if (env->out) n += snprintf(s + n, cap - n, "out=%s,", env->out);
    if (env->trace) n += snprintf(s + n, cap - n, "trace=%s,", env->trace);
  }
  if (n > 0) s[n - 1] = '\0';           /* the last comma */
  return s;
}

/* A path value, when present: non-empty, no control byte, no space at
 * either end, every comma escaped by a `%`, and only p, %, comma (and n
 * when `numbered`) after a `%`. Returns its spaces. */
static size_t check_path(const char *orig, const char *path, const char *what,
                         bool numbered)
{
  if (path == NULL) return 0;
  size_t len = strlen(path), spaces = 0;
  check(len > 0 && path[0] != ' ' && path[len - 1] != ' ', what, orig);
  for (const char *p = path; *p; p++) {
    unsigned char c = (unsigned char)*p;
    check(c >= ' ' && c != 0x7f && c != ',', what, orig);
    if (c == ' ') spaces++;
    if (c == '%') {
      check(p[1] == 'p' || p[1] == '%' || p[1] == ','
            || (numbered && p[1] == 'n'), what, orig);
      p++;
    }
  }
  return spaces;
}

/* Whether the setting has an empty item, splitting it at the commas
 * that no `%` escapes (written apart from the parser's own scan). */
static bool empty_item(const char *s)
{
  size_t len = strlen(s);
  bool at_start = true;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == ',') {
      if (at_start) return true;
      at_start = true;
    } else {
      at_start = false;
      if (s[i] == '%' && i + 1 < len) i++;
    }
  }
  return at_start && len > 0;
}

static void check_success(const char *orig, const char *spec, size_t len,
                          const struct caml_memprof_env *env, const char *msg)
{
  check(msg[0] == '\0', "a message on success", orig);
  if (env->tracking) {
    check(isfinite(env->rate) && env->rate > 0.0 && env->rate <= 1.0,
          "rate outside (0, 1]", orig);
  } else {
    check(env->rate == 0.0 && env->frames == CAML_MEMPROF_DEFAULT_FRAMES
          && env->out != NULL
          && strcmp(env->out, CAML_MEMPROF_DEFAULT_OUT) == 0
          && env->live == CAML_MEMPROF_LIVE_WALK && env->trace == NULL && !env->stacks_at_site
          && env->stackmem == CAML_MEMPROF_DEFAULT_STACKMEM
          && !any_snapshot(env)
          && strcmp(env->snapshot_out, CAML_MEMPROF_DEFAULT_SNAPSHOT_OUT) == 0
          && env->snapshot_sites == CAML_MEMPROF_DEFAULT_SNAPSHOT_SITES
          && env->snapshot_mem == CAML_MEMPROF_DEFAULT_SNAPSHOT_MEM,
          "frames, out, trace, live, stacks, stackmem or snapshot without rate",
          orig);
  }
  check(env->stackmem <= (uint64_t)1 << 40, "stackmem above 2^40", orig);
  check(env->snapshot_sites >= 1
        && env->snapshot_sites <= CAML_MEMPROF_MAX_SNAPSHOT_SITES,
        "snapshot_sites out of range", orig);
  check(any_snapshot(env)
        || env->snapshot_sites == CAML_MEMPROF_DEFAULT_SNAPSHOT_SITES,
        "snapshot_sites without snapshot", orig);
  check(env->snapshot_mem <= (uint64_t)1 << 40, "snapshot_mem above 2^40", orig);
  check(any_snapshot(env)
        || env->snapshot_mem == CAML_MEMPROF_DEFAULT_SNAPSHOT_MEM,
        "snapshot_mem without snapshot", orig);
  check(any_snapshot(env)
        || strcmp(env->snapshot_out, CAML_MEMPROF_DEFAULT_SNAPSHOT_OUT) == 0,
        "snapshot_out without snapshot", orig);
  check(env->frames >= 1 && env->frames <= CAML_MEMPROF_MAX_FRAMES,
        "frames out of range", orig);
  check(env->seeded || env->seed == 0, "a seed without seed=", orig);
  check(env->out != NULL || env->trace != NULL, "no out without trace", orig);
  size_t path_spaces = check_path(orig, env->out, "out", false)
    + check_path(orig, env->trace, "trace", false)
    + check_path(orig, env->snapshot_out, "snapshot_out", true);
  check(strcmp(env->snapshot_out, CAML_MEMPROF_DEFAULT_SNAPSHOT_OUT) == 0
        || (env->snapshot_out >= spec && env->snapshot_out < spec + len),
        "snapshot_out neither the default nor in the setting", orig);
  check(env->out == NULL || strcmp(env->out, CAML_MEMPROF_DEFAULT_OUT) == 0
        || (env->out >= spec && env->out < spec + len),
        "out neither the default nor in the setting", orig);
  check(env->trace == NULL || (env->trace >= spec && env->trace < spec + len),
        "trace not in the setting", orig);
  size_t spaces = 0;
  for (const char *p = orig; *p; p++) {
    unsigned char c = (unsigned char)*p;
    check(c >= ' ' && c != 0x7f, "a control byte accepted", orig);
    if (c == ' ') spaces++;
  }
  check(spaces == path_spaces, "whitespace outside a path accepted", orig);
  check(len == 0 || !empty_item(orig), "an empty item accepted", orig);

  char *again = canonical(env);
  struct caml_memprof_env env2;
  char msg2[CAML_MEMPROF_ENV_MSG_SIZE];
  caml_memprof_env_init(&env2);
  check(caml_memprof_env_parse(again, &env2, msg2, sizeof msg2),
        "the values written back are rejected", orig);
  check(same_env(env, &env2), "the values written back parse differently",
        orig);
  free(again);
}

static void check_failure(const char *orig, const char *msg, size_t size)
{
  size_t n = strnlen(msg, size);
  check(n < size, "message not terminated", orig);
  check(strncmp(msg, PREFIX, strlen(PREFIX)) == 0
        && n > strlen(PREFIX), "message without OCAMLMEMPROF", orig);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)msg[i];
    check(c >= 0x20 && c < 0x7f, "message not printable ASCII on one line",
          orig);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *spec = malloc(size + 1);
  if (spec == NULL) abort();
  memcpy(spec, data, size);
  spec[size] = '\0';
  size_t len = strlen(spec);
  char *orig = strdup(spec);
  if (orig == NULL) abort();

  struct caml_memprof_env env;
  char msg[CAML_MEMPROF_ENV_MSG_SIZE];
  memset(msg, 'X', sizeof msg);
  caml_memprof_env_init(&env);
  if (caml_memprof_env_parse(spec, &env, msg, sizeof msg)) {
    check_success(orig, spec, len, &env, msg);
  } else {
    check_failure(orig, msg, sizeof msg);
  }
  free(orig);
  free(spec);
  return 0;
}
