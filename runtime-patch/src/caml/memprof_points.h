/* memprof-ci: exact counts per allocation point (OCAMLMEMPROF points=on;
 * design in memprof_points.c).
 *
 * 1. A block's allocation point is the id in its header's reserved bits
 *    (Reserved_hd). Native code writes it (the compiler's selectgen.ml);
 *    the runtime writes the pseudo ids below; every other block the
 *    runtime allocates carries CAML_POINT_RUNTIME.
 * 2. `start` registers the tables of the units linked in and switches
 *    counting on; it runs once, from the tracker's start, before any
 *    OCaml code. `register` adds a table natdynlink loaded, when counting
 *    is on. Without points=on, nothing here runs but the tests of
 *    `caml_memprof_points_on`.
 * 3. The counting hooks, each a no-op unless counting is on:
 *    `minor_walk` at the start of a minor collection (minor_gc.c, before
 *    any promotion), `promoted` where the collection's update of a young
 *    header succeeds, `major` for a block allocated directly in the major
 *    heap, `live` for each block the exit's walk of reachability enters
 *    for the first time (memprof_reach.c, memprof_snapshot.c).
 * 4. `render` writes the profile's "points" section (profile-format.md).
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_POINTS_H
#define CAML_MEMPROF_POINTS_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
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
extern bool caml_memprof_points_live_on;

void caml_memprof_points_start(void);
void caml_memprof_points_register(void *table);

void caml_memprof_points_count_minor(caml_domain_state *d);
void caml_memprof_points_count_promoted(caml_domain_state *d, header_t hd);
void caml_memprof_points_count_major(caml_domain_state *d, header_t hd);
void caml_memprof_points_count_live(header_t hd);

Caml_inline void caml_memprof_points_minor_walk(caml_domain_state *d)
{
  if (caml_memprof_points_on) caml_memprof_points_count_minor(d);
}

Caml_inline void caml_memprof_points_promoted(caml_domain_state *d,
                                              header_t hd)
{
  if (caml_memprof_points_on) caml_memprof_points_count_promoted(d, hd);
}

Caml_inline void caml_memprof_points_major(caml_domain_state *d,
                                           header_t hd)
{
  if (caml_memprof_points_on) caml_memprof_points_count_major(d, hd);
}

Caml_inline void caml_memprof_points_live(header_t hd)
{
  if (caml_memprof_points_live_on) caml_memprof_points_count_live(hd);
}

/* A walk of reachability at exit begins: live counts start from zero.
 * `end`: the exit's judgment is over; `missing` is NULL when a walk
 * completed (its counts are the live ones), else why live is not given. */
void caml_memprof_points_live_begin(void);
void caml_memprof_points_live_end(const char *missing);

/* The ",\n\"points\":{...}" section; false when out of memory. */
bool caml_memprof_points_render(struct caml_memprof_buf *b);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_POINTS_H */
