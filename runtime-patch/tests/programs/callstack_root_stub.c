/* C side of callstack_root.ml: blocks allocated from C, a way to leave
   a given number of free words in the minor heap, and a check that a
   value is not a dangling pointer into it. */

#define CAML_INTERNALS
#include <caml/alloc.h>
#include <caml/domain_state.h>
#include <caml/memory.h>
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
   minor heap, with no collection pending, by taking the rest as one
   unreachable block; empty the minor heap first if fewer than k + 2
   words are free or a collection is pending. The block is taken
   without an allocation check, which would ask for a collection when
   the heap is nearly full. */
value memprofci_leave_minor_words(value vk)
{
  intnat k = Long_val(vk);
  caml_domain_state *d = Caml_state;
  if (d->young_ptr - d->young_start < k + 2 || d->requested_minor_gc)
    caml_minor_collection();
  intnat over = (d->young_ptr - d->young_start) - k;
  if (over >= 2) {
    d->young_ptr -= over;
    *(header_t *)d->young_ptr = Make_header(over - 1, Abstract_tag, 0);
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
