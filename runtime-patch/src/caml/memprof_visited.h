/* memprof-ci: the visited set of the exit's walks.
 *
 * 1. One bit per two heap words, set on a visited block's header: a
 *    bitmap per 1 MiB region of address space, found through a
 *    directory per 32 GiB of address space (32768 bitmap pointers,
 *    whose pages are touched only where the heap is) under one table of
 *    directories for the first 2^48 bytes. A lookup compares with the
 *    region it found last and, for another region, makes two dependent
 *    loads, with no hashing or probing. Two words suffice, as only the
 *    bit of a block's header is ever set or read: the smallest block
 *    off the minor heap is a header and one field, so no two headers
 *    share a pair of words. The heap itself is never written.
 *    (memprof_reach.c, design 3.) A block above 2^48 bytes, which no
 *    supported system hands out unasked, counts as out of memory.
 *    Freeing goes through the list of bitmaps added, so no directory is
 *    read where the heap is not (a read can cost a page, see
 *    memprof_points.c, design 7).
 * 2. The lookups are inline here, for the walks' inner loops:
 *    memprof_reach.c's depth-first walk and memprof_snapshot.c's
 *    breadth-first one. Adding a region (out of line) and freeing are
 *    in memprof_reach.c.
 * 3. Out of memory sets `failed`; from then on no block is reported
 *    as first visited, and the walks stop.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_VISITED_H
#define CAML_MEMPROF_VISITED_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "misc.h"
#include "mlvalues.h"

/* The steps of a walk's loop must be inlined into it, whatever the
 * compiler's size heuristics say: a call per visited block costs as
 * much as the visit. */
#if defined(__GNUC__)
#define Caml_memprof_walk_inline static inline __attribute__((always_inline))
#else
#define Caml_memprof_walk_inline Caml_inline
#endif

#define CAML_MEMPROF_REGION_SHIFT 20
#define CAML_MEMPROF_GRANULE_SHIFT 4                 /* two words */
#define CAML_MEMPROF_REGION_BITS \
  ((uintnat)1 << (CAML_MEMPROF_REGION_SHIFT - CAML_MEMPROF_GRANULE_SHIFT))
#define CAML_MEMPROF_DIR_SHIFT 35                    /* 32 GiB */
#define CAML_MEMPROF_DIR_SIZE \
  ((uintnat)1 << (CAML_MEMPROF_DIR_SHIFT - CAML_MEMPROF_REGION_SHIFT))
#define CAML_MEMPROF_DIRS ((uintnat)1 << (48 - CAML_MEMPROF_DIR_SHIFT))

struct caml_memprof_visited {
  uint64_t ***dirs;       /* CAML_MEMPROF_DIRS directories, or NULL */
  uint64_t **bitmaps;     /* every bitmap added, to free them */
  size_t nbitmaps, bitmaps_capacity;
  uintnat last_region;    /* the region of the last lookup, + 1; 0: none */
  uint64_t *last_bits;
  bool failed;
};

/* Adds the region holding `hp` (absent) with a clear bitmap; NULL, with
 * `failed` set, when memory runs out or `hp` is past the directories. */
uint64_t *caml_memprof_visited_add_region(struct caml_memprof_visited *v,
                                          uintnat hp);
void caml_memprof_visited_clear(struct caml_memprof_visited *v);

/* The bitmap of the region holding address `hp`, added if `add`; NULL
 * if absent (or if it could not be added, which sets `failed`). The
 * region of the last lookup is kept aside: most lookups end there. */
Caml_memprof_walk_inline uint64_t *
caml_memprof_region_bits(struct caml_memprof_visited *v, uintnat hp, bool add)
{
  uintnat region = (hp >> CAML_MEMPROF_REGION_SHIFT) + 1;
  if (region == v->last_region) return v->last_bits;
  uintnat d = hp >> CAML_MEMPROF_DIR_SHIFT;
  uint64_t **dir = v->dirs != NULL && d < CAML_MEMPROF_DIRS ? v->dirs[d]
                                                             : NULL;
  uint64_t *bits = dir != NULL
    ? dir[(hp >> CAML_MEMPROF_REGION_SHIFT) & (CAML_MEMPROF_DIR_SIZE - 1)]
    : NULL;
  if (bits == NULL && add) bits = caml_memprof_visited_add_region(v, hp);
  if (bits != NULL) {
    v->last_region = region;
    v->last_bits = bits;
  }
  return bits;
}

/* The bitmap word holding the bit of the header at `hp` in its
 * region's `bits`, and that bit in `*bit`. */
Caml_inline uint64_t *caml_memprof_bit_of(uint64_t *bits, uintnat hp,
                                          uint64_t *bit)
{
  uintnat granule = (hp >> CAML_MEMPROF_GRANULE_SHIFT)
    & (CAML_MEMPROF_REGION_BITS - 1);
  *bit = (uint64_t)1 << (granule & 63);
  return &bits[granule >> 6];
}

/* Sets the bit of the header at `hp`; true if it was clear. */
Caml_memprof_walk_inline bool
caml_memprof_first_visit(struct caml_memprof_visited *v, uintnat hp)
{
  uint64_t *bits = caml_memprof_region_bits(v, hp, true);
  if (bits == NULL) return false;
  uint64_t bit, *cell = caml_memprof_bit_of(bits, hp, &bit);
  if (*cell & bit) return false;
  *cell |= bit;
  return true;
}

/* Whether the bit of the header at `hp` is set. */
Caml_memprof_walk_inline bool
caml_memprof_was_visited(struct caml_memprof_visited *v, uintnat hp)
{
  uint64_t *bits = caml_memprof_region_bits(v, hp, false);
  if (bits == NULL) return false;
  uint64_t bit;
  return (*caml_memprof_bit_of(bits, hp, &bit) & bit) != 0;
}

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_VISITED_H */
