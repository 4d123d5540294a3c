/* memprof-ci: the visited set of the exit's walks.
 *
 * 1. One bit per two heap words, set on a visited block's header: a
 *    bitmap per 1 MiB region of address space, found through a small
 *    open addressing table keyed by region number, with the region of
 *    the last lookup kept aside (most lookups end there). Two words
 *    suffice, as only the bit of a block's header is ever set or
 *    read: the smallest block off the minor heap is a header and one
 *    field, so no two headers share a pair of words. The heap itself
 *    is never written. (memprof_reach.c, design 3.)
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

struct caml_memprof_region {
  uintnat key;                        /* region number + 1; 0 = empty */
  uint64_t *bits;                     /* CAML_MEMPROF_REGION_BITS bits */
};

struct caml_memprof_visited {
  struct caml_memprof_region *regions;
  size_t capacity;                    /* a power of 2, at most half full */
  size_t used;
  uintnat last_key;                   /* the region of the last lookup */
  uint64_t *last_bits;
  bool failed;
};

/* Adds region `key` (absent) with a clear bitmap; NULL, with `failed`
 * set, when memory runs out. */
uint64_t *caml_memprof_visited_add_region(struct caml_memprof_visited *v,
                                          uintnat key);
void caml_memprof_visited_clear(struct caml_memprof_visited *v);

/* The slot for `key`: where it is, or the empty slot where it belongs. */
Caml_inline struct caml_memprof_region *
caml_memprof_region_find(struct caml_memprof_region *regions,
                         size_t capacity, uintnat key)
{
  size_t mask = capacity - 1;
  size_t j = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
  for (;; j = (j + 1) & mask) {
    if (regions[j].key == key || regions[j].key == 0) return &regions[j];
  }
}

/* The bitmap of the region holding address `hp`, added if `add`; NULL
 * if absent (or if it could not be added, which sets `failed`). It
 * becomes the last region. */
Caml_memprof_walk_inline uint64_t *
caml_memprof_region_bits(struct caml_memprof_visited *v, uintnat hp, bool add)
{
  uintnat key = (hp >> CAML_MEMPROF_REGION_SHIFT) + 1;
  if (key == v->last_key) return v->last_bits;
  uint64_t *bits = NULL;
  if (v->capacity) {
    struct caml_memprof_region *r =
      caml_memprof_region_find(v->regions, v->capacity, key);
    if (r->key != 0) bits = r->bits;
  }
  if (bits == NULL) {
    if (!add) return NULL;
    bits = caml_memprof_visited_add_region(v, key);
    if (bits == NULL) return NULL;
  }
  v->last_key = key;
  v->last_bits = bits;
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
