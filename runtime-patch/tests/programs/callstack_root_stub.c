/* C side of callstack_root.ml: blocks allocated from C, a way to leave
   a given number of free words in the minor heap, and a check that a
   value is not a dangling pointer into it. */

#define CAML_INTERNALS
#include <caml/camlatomic.h>
#include <caml/alloc.h>
#include <caml/domain_state.h>
#include <caml/memory.h>
#include <caml/memprof.h>
#include <caml/minor_gc.h>
#include <caml/mlvalues.h>
#include <caml/signals.h>

/* `n` blocks of 3 fields from C, then a request for a minor
   collection, which the next poll in OCaml serves before it runs the
   blocks' allocation callbacks. */
value memprofci_alloc_from_c(value n)
{
  CAMLparam1(n);
  CAMLlocal1(b);
  for (intnat i = 0; i < Long_val(n); i++) {
    b = caml_alloc_small(3, 0);
    Field(b, 0) = Val_long(i);
    Field(b, 1) = Val_long(i);
    Field(b, 2) = Val_long(i);
  }
  caml_request_minor_gc();
  CAMLreturn(Val_unit);
}

/* Leave `k` free words (or k + 1: a block takes at least 2) in the
   minor heap, with no collection or major slice pending: empty the
   minor heap, then take the rest as one unreachable block, without the
   allocation check, which would ask for a collection when the heap is
   nearly full. The triggers are then set as the allocation path leaves
   them past the middle of the heap (the next collection is due when it
   is full; memprof's trigger past the block, which is not sampled), and
   the allocation limit at the nearer one. No action is left flagged
   pending (memprof flags one around callbacks): the return to OCaml
   would turn it into a poll at the next allocation, which would empty
   the nearly full heap there, before the callstack is copied. */
value memprofci_leave_minor_words(value vk)
{
  intnat k = Long_val(vk);
  caml_domain_state *d = Caml_state;
  caml_minor_collection();
  intnat over = (d->young_ptr - d->young_start) - k;
  if (over >= 2) {
    d->young_ptr -= over;
    *(header_t *)d->young_ptr = Make_header(over - 1, Abstract_tag, 0);
    d->young_trigger = d->young_start;
    caml_memprof_set_trigger(d);
    value *limit = d->memprof_young_trigger > d->young_trigger
      ? d->memprof_young_trigger : d->young_trigger;
    atomic_store(&d->young_limit, (uintnat)limit);
    d->action_pending = 0;
  }
  return Val_unit;
}

/* Whether `v` points into this domain's minor heap below its allocation
   pointer, where no live block is. */
value memprofci_dangling(value v)
{
  caml_domain_state *d = Caml_state;
  return Val_bool(Is_block(v) && (value *)v >= d->young_start
                  && (value *)v < d->young_end
                  && (value *)Hp_val(v) < d->young_ptr);
}
