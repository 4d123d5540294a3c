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
 *    by one thread at a time during the one call of
 *    caml_memprof_tracker_finish (the thread that sorts the stacks,
 *    memprof_profile.h, then the one that renders them). It reads only
 *    the runtime's debug information, never the OCaml heap, in native
 *    code; bytecode debug information may be loaded on first use.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_FRAMES_H
#define CAML_MEMPROF_FRAMES_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backtrace_prim.h"

/* The text of one frame object. */
struct caml_memprof_frame_text { const char *json; size_t len; };

/* A growable array of frame object ids (or, once ranked, ranks). */
struct caml_memprof_ids { uint32_t *v; size_t len, cap; };

/* Append the ids of the frame objects of the `n` slots of one stack
 * (innermost first) to `out`, each slot's resolution cached for good;
 * false if out of memory. A whole stack per call: a large profile has
 * millions of slots. */
bool caml_memprof_stack_ids(const backtrace_slot *slots, size_t n,
                            struct caml_memprof_ids *out);

/* Rank every frame object resolved so far by its text. Returns the
 * texts in rank order (an array the caller frees; the texts stay
 * owned here) and their number in `*count`, or NULL if out of memory.
 * Every object resolved belongs to some resolved slot, so ranks are
 * exactly 0 .. *count - 1 (the profile's frame table). */
struct caml_memprof_frame_text *caml_memprof_rank_frames(size_t *count);

/* Replace each of the `n` ids by its frame object's rank, in place.
 * Valid after caml_memprof_rank_frames, for ids it ranked. */
void caml_memprof_ids_to_ranks(uint32_t *ids, size_t n);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_FRAMES_H */
