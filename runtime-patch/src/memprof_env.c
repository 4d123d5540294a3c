/* memprof-ci: reading OCAMLMEMPROF.
 *
 * 1. Syntax and meaning: memprof_env_parse.c (design 1 there), a pure
 *    parser shared with the fuzz target in runtime-patch/fuzz, which
 *    lists the keys: `seed`, `rate` (switches the built-in tracker on)
 *    and the tracker's settings.
 * 2. Parsed once, on first use, which memprof.c arranges to be the
 *    creation of the main domain: before any OCaml code runs and
 *    before any random number is drawn. The result never changes. The
 *    copy of the variable that was parsed is kept for the life of the
 *    process, since `out` points into it.
 * 3. Anything malformed (empty item, unknown or repeated key, missing
 *    `=`, a value out of syntax or range, `frames`/`out`/`live`
 *    without `rate`) is a usage error: the parser's one line on
 *    stderr, naming OCAMLMEMPROF, the key and the value (escaped, so
 *    it stays one line of printable ASCII), and exit status 2. Never
 *    a silent default.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_env.h"
#include "caml/osdeps.h"

static struct caml_memprof_env env;
static bool parsed = false;

const struct caml_memprof_env *caml_memprof_env(void)
{
  if (!parsed) {
    parsed = true;
    caml_memprof_env_init(&env);
    const char *spec = caml_secure_getenv(T(CAML_MEMPROF_ENV_VAR));
    if (spec != NULL) {
      char *copy = strdup(spec);
      char msg[CAML_MEMPROF_ENV_MSG_SIZE];
      if (copy == NULL) {
        fprintf(stderr, "%s: out of memory\n", CAML_MEMPROF_ENV_VAR);
        exit(2);
      }
      if (!caml_memprof_env_parse(copy, &env, msg, sizeof msg)) {
        fprintf(stderr, "%s\n", msg);
        exit(2);
      }
    }
  }
  return &env;
}
