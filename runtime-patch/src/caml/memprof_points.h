/* memprof-ci: exact counts per allocation point (OCAMLMEMPROF points=on;
 * design in memprof_points.c).
 *
 * 1. A block's allocation point is the id in its header's reserved bits
 *    (Reserved_hd). Native code writes it (the compiler's selectgen.ml);
 *    the runtime writes the pseudo ids below for unmarshalled blocks and
 *    copies, and for every other block it allocates the id of the OCaml
 *    call running it (`c_caller`, a "call point"), or CAML_POINT_RUNTIME
 *    when there is none with a source location.
 * 2. `start` registers the tables of the units linked in and switches
 *    counting on; it runs once, from the tracker's start, before any
 *    OCaml code. `register` adds a table natdynlink loaded, when counting
 *    is on. Without points=on, nothing here runs but the tests of
 *    `caml_memprof_points_on`.
 * 3. The counting hooks, each a no-op unless counting is on:
 *    `count_young` for a block the runtime made in the minor heap
 *    (memory.h's Alloc_small, intern.c, obj.c; native code counts its
 *    own, design 4 of memprof_points.c), `promoted` where the
 *    collection's update of a young header succeeds (and `promoted_end`
 *    after the domain's part of the collection), `major` for a block
 *    allocated directly in the major heap, `live` for each block the
 *    exit's walk of reachability enters for the first time
 *    (memprof_reach.c, memprof_snapshot.c).
 * 4. `render` writes the profile's "points" section (profile-format.md).
 * 5. `domain_counters` points a domain state's `points_slots` at the
 *    domain's counters of native allocations, or at counters nobody
 *    reads when counting is off; domain.c calls it wherever a minor heap
 *    is made, before the domain runs OCaml code, and `start` again for
 *    the main domain.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_POINTS_H
#define CAML_MEMPROF_POINTS_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stdint.h>
#include "domain_state.h"
#include "memprof_jsonbuf.h"
#include "mlvalues.h"

/* Pseudo ids; the units' ids start at CAML_POINT_FIRST. */
#define CAML_POINT_RUNTIME 0      /* the runtime's own allocations */
#define CAML_POINT_UNMARSHAL 1    /* intern.c */
#define CAML_POINT_DUP 2          /* Obj.dup, Obj.with_tag */
#define CAML_POINT_FIRST 16
#if HEADER_RESERVED_BITS > 0
/* A unit whose table was never registered (its base word's initial
 * value), or one past the id space. */
#define CAML_POINT_UNREGISTERED (((uintnat)1 << HEADER_RESERVED_BITS) - 1)
#define Caml_point_reserved(id) ((reserved_t)(id))
#else
#define CAML_POINT_UNREGISTERED 0
#define Caml_point_reserved(id) ((reserved_t)0)
#endif

extern bool caml_memprof_points_on;

void caml_memprof_points_start(void);
void caml_memprof_points_register(void *table);

/* The reserved bits of a block the runtime allocates now, while points
 * are counted (memory.h, Caml_alloc_c_reserved; memprof_points.c,
 * design 6). Takes no OCaml lock and allocates nothing on the heap. */
CAMLextern reserved_t caml_memprof_points_c_caller(void);

/* A block the runtime made in the minor heap (memory.h declares it too,
 * for Alloc_small). */
CAMLextern void caml_memprof_points_count_young(header_t hd);
/* At the end of a domain's part of a minor collection, with the words it
 * allocated in the major heap during it (every copy it promoted, and the
 * copies of races it lost): the packed counts of promotions are added to
 * their pairs when near full (memprof_points.c, `settle`). */
void caml_memprof_points_promoted_end(caml_domain_state *d,
                                      uintnat major_words);
void caml_memprof_points_count_major(caml_domain_state *d, header_t hd);

/* Counts of one allocation point, in a domain's counters. */
struct caml_memprof_points_pair { uint64_t blocks, words; };

/* Packed counts, one word per id: each block adds
 * CAML_POINTS_PACK_ONE + its wosize, the blocks above the shift and the
 * sum of their fields below (memprof_points.c, `settle`). */
#define CAML_POINTS_PACK_SHIFT 33
#define CAML_POINTS_PACK_ONE ((uint64_t)1 << CAML_POINTS_PACK_SHIFT)

/* Per domain slot, its packed counts of promoted blocks by id; set when
 * the domain's counters are made (`domain_counters`, before the domain's
 * first collection). The collection keeps its domain's in its oldify
 * state. */
extern uint64_t *caml_memprof_points_promoted_counts[];

/* In oldify, inline: a promotion is counted on the collection's hot
 * path, into the collecting domain's counters `t`. The site and size
 * are read from the major copy, whose header carries the young block's
 * reserved bits and size: oldify then keeps no young header alive
 * across its calls, which would cost it spills with points off. */
Caml_inline void caml_memprof_points_promoted(uint64_t *t, value copy)
{
  if (caml_memprof_points_on) {
    header_t hd = Hd_val(copy);
    t[Reserved_hd(hd)] += CAML_POINTS_PACK_ONE + Wosize_hd(hd);
  }
}

Caml_inline void caml_memprof_points_major(caml_domain_state *d,
                                           header_t hd)
{
  if (caml_memprof_points_on) caml_memprof_points_count_major(d, hd);
}

Caml_inline void caml_memprof_points_young(header_t hd)
{
  if (caml_memprof_points_on) caml_memprof_points_count_young(hd);
}

/* The live counts by id while a walk counts them, else NULL. */
extern struct caml_memprof_points_pair *caml_memprof_points_live_counts;

Caml_inline void caml_memprof_points_live(header_t hd)
{
  struct caml_memprof_points_pair *c = caml_memprof_points_live_counts;
  if (c != NULL) {
    c += Reserved_hd(hd);
    c->blocks++;
    c->words += Whsize_hd(hd);
  }
}

void caml_memprof_points_domain_counters(caml_domain_state *d);

/* A walk of reachability at exit begins: live counts start from zero.
 * `end`: the exit's judgment is over; `missing` is NULL when a walk
 * completed (its counts are the live ones), else why live is not given. */
void caml_memprof_points_live_begin(void);
void caml_memprof_points_live_end(const char *missing);

/* The ",\n\"points\":{...}" section; false when out of memory. */
bool caml_memprof_points_render(struct caml_memprof_buf *b);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_POINTS_H */
