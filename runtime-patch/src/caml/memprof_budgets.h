/* memprof-ci: exact, inclusive counts per call of the functions annotated
 * with an allocation budget (design in memprof_budgets.c).
 *
 * 1. The patched compiler (translcore.ml) brackets the body of each
 *    annotated function, in native code, with the two primitives
 *    caml_memprof_budget_enter and caml_memprof_budget_leave.
 * 2. `start` switches counting on; the tracker's start calls it, before
 *    any OCaml code runs. Until then the primitives count nothing.
 * 3. `any` says whether some annotated function was entered, so the
 *    profile has a "budgets" section (version 6); `render` writes it.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_BUDGETS_H
#define CAML_MEMPROF_BUDGETS_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include "memprof_jsonbuf.h"
#include "mlvalues.h"

void caml_memprof_budgets_start(void);
bool caml_memprof_budgets_any(void);
bool caml_memprof_budgets_render(struct caml_memprof_buf *b);

CAMLextern value caml_memprof_budget_enter(value desc);
CAMLextern value caml_memprof_budget_leave(value token);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_BUDGETS_H */
