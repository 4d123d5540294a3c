/* memprof-ci: which sampled blocks are reachable at exit.
 *
 * 1. caml_memprof_judge_by_reachability decides which tracked blocks
 *    are live at exit by a read-only walk of the heap (memprof_reach.c,
 *    design there) and hands the verdict to memprof. It returns false,
 *    having changed nothing, when it cannot be exact (another domain
 *    running, or an ephemeron was ever created) or runs out of memory;
 *    the caller (memprof_tracker.c) then lets two major cycles decide.
 * 2. caml_memprof_ephemerons_created: set (relaxed, never cleared) by
 *    weak.c whenever an ephemeron is created (a weak array is one), on
 *    any domain; read by the walk, which runs when no other domain
 *    does.
 * 3. Thread-safety: the walk runs on the one running domain, at exit.
 * 4. caml_memprof_release_minor_free gives the free part of the minor
 *    heap back at exit (design 5 there), for the exit's own memory.
 * 5. caml_memprof_visited_has is a caml_memprof_reachable for the
 *    visited set (caml/memprof_visited.h) of memprof_snapshot.c's walk,
 *    which judges by it the same way.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_REACH_H
#define CAML_MEMPROF_REACH_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include "camlatomic.h"
#include "misc.h"
#include "mlvalues.h"

extern atomic_uintnat caml_memprof_ephemerons_created;
bool caml_memprof_judge_by_reachability(void);

bool caml_memprof_visited_has(value block, void *visited);

/* Hands the whole pages of the free part of the calling domain's minor
 * heap back to the system (memprof_reach.c, design 5): at exit. */
void caml_memprof_release_minor_free(void);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_REACH_H */
