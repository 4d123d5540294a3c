/* memprof-ci: stopping a run after its N-th minor collection
 * (OCAMLMEMPROF stop=N; design in memprof_stop.c).
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_STOP_H
#define CAML_MEMPROF_STOP_H

#ifdef CAML_INTERNALS

#include "mlvalues.h"
#include "domain_state.h"

/* Set once the stop is due; memprof.c's pending-action callback reads it
 * at every safe point. */
extern atomic_uintnat caml_memprof_stop_requested;

/* At the end of each minor collection, on each domain (memprof.c's
 * caml_memprof_after_minor_gc, inside the stop-the-world section). */
void caml_memprof_stop_after_minor_gc(caml_domain_state *state);

/* From the pending-action callback once the stop is due: its first call
 * exits as the program's own exit does (caml_do_exit), with status 0;
 * a later one, made while that exit runs (the tracker's finish reaches
 * safe points too), returns. */
void caml_memprof_stop_now(void);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_STOP_H */
