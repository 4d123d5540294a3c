/* memprof-ci: the built-in tracker's hooks in the runtime.
 *
 * 1. With OCAMLMEMPROF=rate=... (caml/memprof_env.h) the runtime
 *    profiles the whole program with the C tracker of
 *    memprof_tracker.c (design there) and writes the profile at exit.
 *    Without it, both calls below do nothing.
 * 2. `start` runs just before the program's first module initialiser
 *    (startup_nat.c, startup_byt.c), on the main domain, once.
 *    `finish` runs at exit (sys.c's caml_do_exit, printexc.c's fatal
 *    uncaught exception); only its first call does anything, whichever
 *    thread makes it. It returns the exit status to use: `retcode`, or
 *    2 when the profile could not be written and `retcode` was 0.
 * 3. `finish_incomplete` is `finish` for a program that the runtime
 *    itself ends abnormally at a point where the heap and the runtime
 *    lock are in order (fiber.c, when an effect is unhandled and the
 *    Effect module that registers Effect.Unhandled is not linked); the
 *    profile then carries `incomplete` with `reason`. caml_fatal_error
 *    does not call it (runtime-patch/format/profile-format.md says why).
 * 4. Snapshots on demand (memprof_tracker.c, design 10): a SIGUSR1 with
 *    snapshot=signal sets `caml_memprof_snapshot_requested`, which
 *    memprof.c's pending-action callback (caml_memprof_run_callbacks_res)
 *    checks at each safe point, calling
 *    caml_memprof_tracker_snapshot_requested when it is set; that
 *    writes the snapshot on the domain that takes it.
 * 5. Memory outside the OCaml heap is sampled with its own sources:
 *    custom blocks' out-of-heap memory (CAML_MEMPROF_SRC_CUSTOM) and,
 *    from OCaml 5.4 on, the mapping of Unix.map_file
 *    (CAML_MEMPROF_SRC_MAP_FILE, ocaml/ocaml#13675; on 5.3 that memory
 *    is not sampled at all). The profile counts both as `custom` and the
 *    trace as memtrace's external allocations:
 *    caml_memprof_src_out_of_heap says which sources those are.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_TRACKER_H
#define CAML_MEMPROF_TRACKER_H

#ifdef CAML_INTERNALS

void caml_memprof_tracker_start(void);
int caml_memprof_tracker_finish(int retcode);
int caml_memprof_tracker_finish_incomplete(int retcode, const char *reason);

/* The counters of the site of a tracked block, from the data memprof
 * keeps for it (a site record, or a trace record naming one): the
 * site's identity in the sorted stacks (memprof_profile.h). */
#include "camlatomic.h"
#include "mlvalues.h"
const atomic_uintnat *caml_memprof_tracker_site_counts(value data);

#include "memprof.h"
#include "version.h"
Caml_inline int caml_memprof_src_out_of_heap(int source)
{
#if OCAML_VERSION_MAJOR * 100 + OCAML_VERSION_MINOR >= 504
  if (source == CAML_MEMPROF_SRC_MAP_FILE) return 1;
#endif
  return source == CAML_MEMPROF_SRC_CUSTOM;
}

extern atomic_uintnat caml_memprof_snapshot_requested;
void caml_memprof_tracker_snapshot_requested(void);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_TRACKER_H */
