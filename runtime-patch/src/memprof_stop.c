/* memprof-ci: stopping a run after its N-th minor collection.
 *
 * 1. What it is for. The gate counts what profiling costs by running the
 *    program under valgrind twice, with the tracker off and on, which
 *    takes 50 to 120 times the run's own time. OCAMLMEMPROF stop=N (also
 *    without rate=, so that the run with the tracker off can take it)
 *    ends both runs at the same point of the program, after its N-th
 *    minor collection, so that a prefix of the run is counted and the
 *    harness chooses its length (harness/STATISTICS.md, "Profiling
 *    overhead").
 * 2. Why minor collections. The tracker allocates nothing on the OCaml
 *    heap and its sampling is GC-independent (memprof.c, design 8.1), so
 *    a single-domain program collects at the same points of its
 *    execution with the tracker on or off: the N-th collection is the
 *    same moment of the program on both sides, and the profile's gc
 *    counters say how many collections a whole run makes.
 * 3. How. At the end of each minor collection memprof.c calls
 *    caml_memprof_stop_after_minor_gc on each domain, inside the
 *    stop-the-world section. Once caml_minor_collections_count has
 *    reached N it sets caml_memprof_stop_requested and makes an action
 *    pending on the domain; the pending-action callback
 *    (caml_memprof_run_callbacks_res) runs at the next safe point, where
 *    OCaml code may run and the heap is in order, and calls
 *    caml_memprof_stop_now. Its first call exits as Stdlib.exit 0 does
 *    once its at_exit functions have run: through caml_do_exit, so the
 *    tracker writes its profile as at exit (memprof_tracker.c, design
 *    4), with `stop` in its config. The program's at_exit functions do
 *    not run, so output it had not flushed is lost; the counted runs do
 *    not read it. The exit reaches safe points too (the tracker's finish
 *    may run collections), so a later call only returns.
 * 4. Cost when stop= is not set: one call and one load per minor
 *    collection.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include "caml/memprof_env.h"
#include "caml/memprof_stop.h"
#include "caml/minor_gc.h"
#include "caml/signals.h"
#include "caml/sys.h"

atomic_uintnat caml_memprof_stop_requested = 0;

enum { NOT_DUE, DUE, EXITING };

void caml_memprof_stop_after_minor_gc(caml_domain_state *state)
{
  uint64_t n = caml_memprof_env()->stop;
  if (n == 0 || atomic_load_relaxed(&caml_minor_collections_count) < n
      || atomic_load_relaxed(&caml_memprof_stop_requested) == EXITING)
    return;
  atomic_store_relaxed(&caml_memprof_stop_requested, DUE);
  caml_set_action_pending(state);
}

void caml_memprof_stop_now(void)
{
  uintnat due = DUE;
  if (atomic_compare_exchange_strong(&caml_memprof_stop_requested, &due,
                                     EXITING))
    caml_do_exit(0);
}
