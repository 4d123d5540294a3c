/* memprof-ci: parsing OCAMLMEMPROF.
 *
 * 1. Syntax: comma-separated key=value pairs. Keys: `seed` (unsigned
 *    64-bit decimal), `rate` (float in (0,1], switches the built-in
 *    tracker on), `frames` (1..4096, callstack prefix per sample),
 *    `out` (profile path; `%p` is the pid, `%%` a percent sign),
 *    `live` (how blocks live at exit are told from dead ones: `walk`,
 *    the default, walks what is reachable; `gc` lets two major cycles
 *    decide, slower, the same answer, kept to cross-check the walk).
 * 2. Parsed once, on first use, which memprof.c arranges to be the
 *    creation of the main domain: before any OCaml code runs and
 *    before any random number is drawn. The result never changes.
 * 3. Anything malformed (unknown or repeated key, missing `=`, a value
 *    out of range, `frames`/`out`/`live` without `rate`) is a usage error:
 *    one line on stderr naming OCAMLMEMPROF, the key and the value, and
 *    exit status 2. Never a silent default.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_env.h"
#include "caml/osdeps.h"

static struct caml_memprof_env env = {
  .seeded = false, .seed = 0,
  .tracking = false, .rate = 0.0,
  .frames = CAML_MEMPROF_DEFAULT_FRAMES,
  .out = CAML_MEMPROF_DEFAULT_OUT,
  .live_by_gc = false,
};
static bool parsed = false;

static void usage_error(const char *key, const char *val, const char *what)
{
  fprintf(stderr, "%s: invalid value '%s' for key '%s': %s\n",
          CAML_MEMPROF_ENV_VAR, val, key, what);
  exit(2);
}

static uint64_t parse_seed(const char *val)
{
  const char *what = "expected an unsigned 64-bit decimal integer "
                     "(0 to 18446744073709551615)";
  if (*val < '0' || *val > '9') usage_error("seed", val, what);
  errno = 0;
  char *end;
  unsigned long long n = strtoull(val, &end, 10);
  if (errno == ERANGE || *end != '\0') usage_error("seed", val, what);
  return (uint64_t)n;
}

static double parse_rate(const char *val)
{
  const char *what = "expected a number greater than 0 and at most 1, "
                     "e.g. rate=1e-4";
  if (*val == '\0' || strchr(" \t\n", *val)) usage_error("rate", val, what);
  errno = 0;
  char *end;
  double r = strtod(val, &end);
  if (errno == ERANGE || *end != '\0' || !isfinite(r) || !(r > 0.0)
      || r > 1.0) {
    usage_error("rate", val, what);
  }
  return r;
}

static intnat parse_frames(const char *val)
{
  char what[80];
  snprintf(what, sizeof what, "expected an integer from 1 to %d",
           CAML_MEMPROF_MAX_FRAMES);
  if (*val < '0' || *val > '9') usage_error("frames", val, what);
  errno = 0;
  char *end;
  long n = strtol(val, &end, 10);
  if (errno == ERANGE || *end != '\0' || n < 1
      || n > CAML_MEMPROF_MAX_FRAMES) {
    usage_error("frames", val, what);
  }
  return (intnat)n;
}

static const char *parse_out(const char *val)
{
  if (*val == '\0') usage_error("out", val, "expected a file path");
  for (const char *p = val; *p; p++) {
    if (*p == '%') {
      if (p[1] != 'p' && p[1] != '%') {
        usage_error("out", val,
                    "only %p (the pid) and %% may follow a percent sign");
      }
      p++;
    }
  }
  char *copy = strdup(val);
  if (copy == NULL) usage_error("out", val, "out of memory");
  return copy;
}

static bool parse_live(const char *val)
{
  if (strcmp(val, "walk") == 0) return false;
  if (strcmp(val, "gc") == 0) return true;
  usage_error("live", val, "expected walk (the default) or gc");
  return false;
}

static void parse(char *spec)
{
  bool seen_seed = false, seen_rate = false, seen_frames = false,
       seen_out = false, seen_live = false;
  const char *frames_val = NULL, *live_val = NULL;
  char *save = NULL;
  for (char *item = strtok_r(spec, ",", &save); item != NULL;
       item = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(item, '=');
    if (eq == NULL) {
      usage_error(item, "", "expected key=value (keys: seed, rate, "
                  "frames, out, live)");
    }
    *eq = '\0';
    const char *key = item, *val = eq + 1;
    bool *seen;
    if (strcmp(key, "seed") == 0) {
      seen = &seen_seed; env.seed = parse_seed(val); env.seeded = true;
    } else if (strcmp(key, "rate") == 0) {
      seen = &seen_rate; env.rate = parse_rate(val); env.tracking = true;
    } else if (strcmp(key, "frames") == 0) {
      seen = &seen_frames; env.frames = parse_frames(val); frames_val = val;
    } else if (strcmp(key, "out") == 0) {
      seen = &seen_out; env.out = parse_out(val);
    } else if (strcmp(key, "live") == 0) {
      seen = &seen_live; env.live_by_gc = parse_live(val); live_val = val;
    } else {
      usage_error(key, val,
                  "unknown key (keys: seed, rate, frames, out, live)");
      return;
    }
    if (*seen) usage_error(key, val, "key given twice");
    *seen = true;
  }
  if (!seen_rate && (seen_frames || seen_out || seen_live)) {
    const char *key = seen_out ? "out" : seen_frames ? "frames" : "live";
    const char *val = seen_out ? env.out : seen_frames ? frames_val : live_val;
    usage_error(key, val,
                "has no effect without rate=, which starts the tracker");
  }
}

const struct caml_memprof_env *caml_memprof_env(void)
{
  if (!parsed) {
    parsed = true;
    const char *spec = caml_secure_getenv(T(CAML_MEMPROF_ENV_VAR));
    if (spec != NULL) {
      char *copy = strdup(spec);
      if (copy == NULL) usage_error("", spec, "out of memory");
      parse(copy);
      free(copy);
    }
  }
  return &env;
}
