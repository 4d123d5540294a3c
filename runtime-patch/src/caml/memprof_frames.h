/* memprof-ci: source locations of the tracker's raw callstack slots.
 *
 * 1. A raw backtrace slot (a return address, or a bytecode pc) resolves
 *    to one or more frame objects, innermost first (several when calls
 *    were inlined; one unknown frame when the slot has no debug
 *    information). A frame object is the JSON text of one frame of the
 *    profile format (runtime-patch/format/profile-format.md), stored
 *    once however many slots and stacks share it ("interned") and known
 *    by its id.
 * 2. Once every slot of the profile is resolved, the frame objects are
 *    ranked by their text (caml_memprof_rank_frames). A stack's
 *    sequence of ranks then orders stacks exactly as their joined JSON
 *    texts would, so sorting and merging stacks compares integers.
 * 3. Everything is resolved at most once and kept until exit: the
 *    resolution of a slot, a frame object's text, a rank once set.
 *    Out of memory is reported (NULL), never fatal.
 * 4. Thread-safety: none. This is exit-time state without locks, used
 *    only by the one call of caml_memprof_tracker_finish.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_FRAMES_H
#define CAML_MEMPROF_FRAMES_H

#ifdef CAML_INTERNALS

#include <stddef.h>
#include <stdint.h>
#include "backtrace_prim.h"

/* The resolution of one slot (opaque; kept until exit). */
struct caml_memprof_slot_frames;

/* The text of one frame object. */
struct caml_memprof_frame_text { const char *json; size_t len; };

/* Resolve the `n` slots of one stack into `out[0 .. n-1]`, each
 * resolution cached for good. Returns how many frame objects they
 * hold in all, or SIZE_MAX if out of memory. A whole stack per call:
 * a large profile has millions of slots. */
size_t caml_memprof_resolve_slots(const backtrace_slot *slots, size_t n,
                                  const struct caml_memprof_slot_frames **out);

/* Rank every frame object resolved so far by its text. Returns the
 * texts in rank order (an array the caller frees; the texts stay
 * owned here) and their number in `*count`, or NULL if out of memory.
 * Every object resolved belongs to some resolved slot, so ranks are
 * exactly 0 .. *count - 1 (the profile's frame table). */
struct caml_memprof_frame_text *caml_memprof_rank_frames(size_t *count);

/* The ranks of the frame objects of `sfs[0 .. n-1]`, in order
 * (innermost first within each slot), into `out`, which has room for
 * the count caml_memprof_resolve_slots returned; returns that count.
 * Valid after caml_memprof_rank_frames, for slots resolved before it. */
size_t caml_memprof_slots_ranks(
  const struct caml_memprof_slot_frames *const *sfs, size_t n,
  uint32_t *out);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_FRAMES_H */
