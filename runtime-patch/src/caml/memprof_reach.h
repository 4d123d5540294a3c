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
 * 4. The visited set below is the walk's, lent to the snapshot's walk
 *    (caml/memprof_snapshot.h), which judges by it the same way.
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

/* The walk's visited set (a bit per two heap words, memprof_reach.c
 * design 3), for the snapshot's own walk (memprof_snapshot.c): `first`
 * sets the bit of a block (not young, not infix) and says whether it
 * was clear; after a failure (out of memory) it says false and `failed`
 * true. `has` is a caml_memprof_reachable. */
struct caml_memprof_visited;
struct caml_memprof_visited *caml_memprof_visited_new(void);
bool caml_memprof_visited_first(struct caml_memprof_visited *v, value block);
bool caml_memprof_visited_failed(const struct caml_memprof_visited *v);
bool caml_memprof_visited_has(value block, void *v);
void caml_memprof_visited_free(struct caml_memprof_visited *v);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_REACH_H */
