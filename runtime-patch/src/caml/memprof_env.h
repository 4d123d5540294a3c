/* memprof-ci: the OCAMLMEMPROF setting of the patched runtime (its
 * syntax and struct caml_memprof_env: memprof_env_parse.h).
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_ENV_H
#define CAML_MEMPROF_ENV_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stdint.h>
#include "camlatomic.h"
#include "memprof_env_parse.h"
#include "misc.h"

/* The parsed OCAMLMEMPROF, read on first call (when the main domain is
 * created, before any OCaml code). A malformed value prints one line
 * naming the variable, key and value on stderr and exits with 2. */
const struct caml_memprof_env *caml_memprof_env(void);

/* The built-in tracker (memprof_tracker.c). `start` runs just before
 * the program's first module initialiser; `finish` at exit, once,
 * returns the exit status to use: `retcode`, or 2 when the profile
 * could not be written and `retcode` was 0. */
void caml_memprof_tracker_start(void);
int caml_memprof_tracker_finish(int retcode);

/* Exit-time reachability (memprof_reach.c). `judge_by_reachability`
 * decides which tracked blocks are live at exit by walking the heap,
 * and returns false, having changed nothing, when it cannot be exact
 * (several domains running, ephemerons created: weak.c sets the flag)
 * or runs out of memory; the caller then lets major cycles decide. */
extern atomic_uintnat caml_memprof_ephemerons_created;
bool caml_memprof_judge_by_reachability(void);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_ENV_H */
