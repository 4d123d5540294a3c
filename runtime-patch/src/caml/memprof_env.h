/* memprof-ci: the OCAMLMEMPROF setting of the patched runtime (its
 * syntax and struct caml_memprof_env: memprof_env_parse.h).
 *
 * 1. Read and parsed once, on the first call (memprof_env.c, design
 *    there), which memprof.c arranges to be the creation of the main
 *    domain, before any OCaml code; the result never changes, so later
 *    calls from any thread read it without a lock.
 * 2. Users: memprof.c (seed), memprof_tracker.c and memprof_profile.c
 *    (rate, frames, out, live). The tracker's own interface is
 *    caml/memprof_tracker.h, the exit-time walk's caml/memprof_reach.h.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_ENV_H
#define CAML_MEMPROF_ENV_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stdint.h>
#include "memprof_env_parse.h"
#include "misc.h"

/* The parsed OCAMLMEMPROF, read on first call (when the main domain is
 * created, before any OCaml code). A malformed value prints one line
 * naming the variable, key and value on stderr and exits with 2. */
const struct caml_memprof_env *caml_memprof_env(void);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_ENV_H */
