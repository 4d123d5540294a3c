/* memprof-ci: the walk that counts a chunk of the minor heap by
 * allocation point (memprof_points.c, design 4), on its own so that a
 * test can run it on made-up heaps (runtime-patch/tests/walk_check.c).
 *
 * 1. Input: n segments [p[i], e[i]), each a run of headered blocks with
 *    nothing between them, of at most Max_young_wosize fields each.
 *    Output: for each block, CAML_POINTS_PACK_ONE + its wosize added to
 *    m[its id] (its header's reserved bits); nothing else is written.
 *    The macros' short names are for memprof_points.c and the test,
 *    the only files that include this one.
 * 2. A segment's walk is a chain of loads (each header gives the next
 *    one's address); independent segments side by side overlap their
 *    chains, eight at a time, then four, two, one for what is left.
 * 3. Steps that cannot take a pointer past its end (each takes it at
 *    most Whsize_wosize(Max_young_wosize) words further) need no check
 *    of the ends: the side-by-side loops take as many as the segment
 *    with the least room allows, then look again.
 * 4. Runs of equal headers are counted together: when the first four
 *    segments side by side read one header, and at the end of a
 *    segment. The next header's address then does not wait on a load of
 *    the size, nor one update of a counter on the one before.
 * 5. These C loops are the walk on every target.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_POINTS_WALK_H
#define CAML_MEMPROF_POINTS_WALK_H

#ifdef CAML_INTERNALS

#include <stdint.h>
#include "mlvalues.h"
#include "memprof_points.h"

/* Wosize_hd by two shifts, with no mask to keep in a register. */
#define WOSIZE(hd) (((hd) << HEADER_RESERVED_BITS) \
                    >> (HEADER_RESERVED_BITS + HEADER_WOSIZE_SHIFT))

/* One block, of header hd at *p: counted, and p moved past it. */
#define COUNT_STEP(m, hd, p) do {                                       \
    uintnat wo_ = WOSIZE(hd);                                           \
    (m)[Reserved_hd(hd)] += CAML_POINTS_PACK_ONE + wo_;                 \
    (p) += wo_ + 1;                                                     \
  } while (0)

/* Four segments at p0..p3 (ends e0..e3) that all read header h go on
 * together while they do: the next headers' addresses then wait on no
 * load of the size, and one update of the counter serves the whole run
 * instead of updates of the same counter in a row, each waiting for the
 * one before. The pointers are left past the run. */
#define COUNT_RUN_OF_FOUR(m, h, p0, p1, p2, p3, e0, e1, e2, e3) do {      \
    uintnat wo_ = WOSIZE(h);                                            \
    uint64_t k_ = 0;                                                    \
    do {                                                                \
      (p0) += wo_ + 1; (p1) += wo_ + 1; (p2) += wo_ + 1; (p3) += wo_ + 1; \
      k_++;                                                             \
    } while ((p0) < (e0) && (p1) < (e1) && (p2) < (e2) && (p3) < (e3)   \
             && *(p0) == (h) && *(p1) == (h) && *(p2) == (h)            \
             && *(p3) == (h));                                          \
    (m)[Reserved_hd(h)] += 4 * k_ * (CAML_POINTS_PACK_ONE + wo_);       \
  } while (0)

/* Count the blocks of [p, end), all headered. A run of equal headers is
 * counted at once: the next header's address then does not wait on a
 * load of the size. */
static void count_one(uint64_t *m, header_t *p, header_t *end)
{
  while (p < end) {
    header_t hd = *p;
    uintnat wo = WOSIZE(hd);
    header_t *q = p + wo + 1;
    uint64_t n = 1;
    while (q < end && *q == hd) { n++; q += wo + 1; }
    m[Reserved_hd(hd)] += n * (CAML_POINTS_PACK_ONE + wo);
    p = q;
  }
}

static void count_two(uint64_t *m, header_t *p0, header_t *e0,
                      header_t *p1, header_t *e1)
{
  while (p0 < e0 && p1 < e1) {
    header_t h0 = *p0, h1 = *p1;
    COUNT_STEP(m, h0, p0);
    COUNT_STEP(m, h1, p1);
  }
  count_one(m, p0, e0);
  count_one(m, p1, e1);
}

/* Four segments side by side: the walk of one segment is a chain of
 * loads (each header gives the next one's address), and independent
 * chains overlap; four keep every pointer in a register. When all four
 * read the same header (in a long run of one kind of block), they go
 * on together (COUNT_RUN_OF_FOUR). */
static void count_four(uint64_t *m, header_t **p, header_t **e)
{
  header_t *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
  header_t *e0 = e[0], *e1 = e[1], *e2 = e[2], *e3 = e[3];
  for (;;) {
    /* Steps that take no pointer past its end, as no young block is
     * larger than Max_young_wosize: they need no check of the ends. */
    uintnat room = e0 - p0;
    if ((uintnat)(e1 - p1) < room) room = e1 - p1;
    if ((uintnat)(e2 - p2) < room) room = e2 - p2;
    if ((uintnat)(e3 - p3) < room) room = e3 - p3;
    uintnat steps = room / Whsize_wosize(Max_young_wosize);
    if (steps == 0) break;
    do {
      header_t h0 = *p0, h1 = *p1, h2 = *p2, h3 = *p3;
      if (CAMLunlikely(h0 == h1 && h0 == h2 && h0 == h3)) {
        COUNT_RUN_OF_FOUR(m, h0, p0, p1, p2, p3, e0, e1, e2, e3);
        break;
      }
      COUNT_STEP(m, h0, p0);
      COUNT_STEP(m, h1, p1);
      COUNT_STEP(m, h2, p2);
      COUNT_STEP(m, h3, p3);
    } while (--steps > 0);
  }
  count_two(m, p0, e0, p1, e1);
  count_two(m, p2, e2, p3, e3);
}


/* Eight segments side by side, as count_four but with twice the chains
 * in flight; the steps need no ends. A run is followed in the first four
 * segments only: when they all read one header, they go on together to
 * the end of the run (eight updates of one counter in a row would each
 * wait for the one before), and the eight then resume. When no steps
 * are left, count_four takes each half to its end. */
static void count_eight(uint64_t *m, header_t **p, header_t **e)
{
  header_t *p0 = p[0], *p1 = p[1], *p2 = p[2], *p3 = p[3];
  header_t *p4 = p[4], *p5 = p[5], *p6 = p[6], *p7 = p[7];
  for (;;) {
    uintnat room = e[0] - p0;
#define NARROW(i) \
    if ((uintnat)(e[i] - p##i) < room) room = e[i] - p##i
    NARROW(1); NARROW(2); NARROW(3); NARROW(4); NARROW(5); NARROW(6);
    NARROW(7);
#undef NARROW
    uintnat steps = room / Whsize_wosize(Max_young_wosize);
    if (steps == 0) break;
    do {
      header_t h0 = *p0, h1 = *p1, h2 = *p2, h3 = *p3;
      if (CAMLunlikely(h0 == h1 && h0 == h2 && h0 == h3)) {
        COUNT_RUN_OF_FOUR(m, h0, p0, p1, p2, p3, e[0], e[1], e[2], e[3]);
        break;                  /* the ends moved: count the room again */
      }
      header_t h4 = *p4, h5 = *p5, h6 = *p6, h7 = *p7;
      COUNT_STEP(m, h0, p0);
      COUNT_STEP(m, h1, p1);
      COUNT_STEP(m, h2, p2);
      COUNT_STEP(m, h3, p3);
      COUNT_STEP(m, h4, p4);
      COUNT_STEP(m, h5, p5);
      COUNT_STEP(m, h6, p6);
      COUNT_STEP(m, h7, p7);
    } while (--steps > 0);
  }
  header_t *lo[4] = { p0, p1, p2, p3 }, *hi[4] = { p4, p5, p6, p7 };
  count_four(m, lo, e);
  count_four(m, hi, e + 4);
}

/* Count the segments [p[i], e[i]), i < n, all headered: eight side by
 * side, then four, two, one. */
static void count_segments(uint64_t *m, header_t **p, header_t **e, int n)
{
  int i = 0;
  for (; i + 8 <= n; i += 8) count_eight(m, p + i, e + i);
  for (; i + 4 <= n; i += 4) count_four(m, p + i, e + i);
  for (; i + 2 <= n; i += 2) count_two(m, p[i], e[i], p[i + 1], e[i + 1]);
  if (i < n) count_one(m, p[i], e[i]);
}

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_POINTS_WALK_H */
