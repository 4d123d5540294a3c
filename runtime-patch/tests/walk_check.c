/* memprof-ci: the minor heap's walk (caml/memprof_points_walk.h) against
 * a count one block at a time, on made-up heaps.
 *
 * 1. Each trial lays out 1 to 11 segments end to end in one buffer, as
 *    the boundaries cut a chunk of the real minor heap, and fills each
 *    with headered blocks whose fields hold words that look like
 *    headers. The layouts are those the walk treats apart: blocks of
 *    random sizes up to Max_young_wosize, a few ids so that headers
 *    repeat, runs of one header in every segment or in the first four
 *    only, ending at a different block in each, largest blocks at a
 *    segment's end, empty and one-block segments.
 * 2. count_segments counts them into one packed array; the reference
 *    counts each block by its own header. The arrays must be equal, and
 *    the guard after the last segment, of headers with an id no block
 *    has, must be counted nowhere.
 * 3. The trials come from a fixed seed, so the outcome is the same on
 *    every machine. Prints the blocks it checked; exit 1 and the first difference on a
 *    mismatch. */

#define CAML_INTERNALS
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caml/gc.h"
#include "caml/memprof_points_walk.h"

#define IDS 64
#define GUARD_ID (IDS - 1)
#define MAX_SEGMENTS 11
#define SEGMENT_WORDS 6000
#define GUARD_WORDS (2 * Whsize_wosize(Max_young_wosize))

static uint64_t state = 0x9E3779B97F4A7C15ull;

static uint64_t next(void)      /* xorshift64* */
{
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 0x2545F4914F6CDD1Dull;
}

static uintnat below(uintnat n) { return (uintnat)(next() % n); }

static header_t header(uintnat wosize, uintnat id)
{
  return Make_header_with_reserved(wosize, (tag_t)below(4), 0, id);
}

/* A block's size: mostly small, as in real heaps, sometimes the largest. */
static uintnat some_wosize(void)
{
  uintnat r = below(100);
  if (r < 70) return 1 + below(4);
  if (r < 95) return 1 + below(32);
  if (r < 98) return 1 + below(Max_young_wosize);
  return Max_young_wosize;
}

/* Fill [p, p + words) with blocks; the layout `kind` is shared by the
 * trial's segments, `lane` is the segment's place. */
static void fill(header_t *p, uintnat words, int kind, int lane,
                 header_t common)
{
  header_t *end = p + words;
  uintnat run_left = kind == 2 && lane < 4 ? 20 + below(100) : 0;
  while (p < end) {
    uintnat room = end - p;
    header_t hd;
    if (kind == 1 || run_left > 0) {
      hd = common;
      if (run_left > 0) run_left--;
    } else if (kind == 3 && room <= Whsize_wosize(Max_young_wosize)
               && room >= 2) {
      hd = header(room - 1, below(GUARD_ID));   /* ends on the segment */
    } else {
      hd = header(some_wosize(), below(kind == 4 ? 2 : GUARD_ID));
    }
    /* Every block has a field, as in the minor heap: the last block
     * takes what is left, and none leaves a single word. */
    uintnat wo = Wosize_hd(hd);
    if (wo + 1 > room) wo = room - 1;
    else if (room - (wo + 1) == 1) wo = wo < Max_young_wosize ? wo + 1 : wo - 1;
    if (wo != Wosize_hd(hd))
      hd = Make_header_with_reserved(wo, Tag_hd(hd), 0, Reserved_hd(hd));
    *p = hd;
    for (uintnat i = 1; i <= wo; i++)
      p[i] = header(1 + below(8), below(GUARD_ID)); /* looks like one */
    p += wo + 1;
  }
}

int main(void)
{
  static header_t heap[MAX_SEGMENTS * SEGMENT_WORDS + GUARD_WORDS];
  static uint64_t m[(uintnat)1 << HEADER_RESERVED_BITS];
  uint64_t ref[IDS];
  uint64_t blocks = 0;
  for (int trial = 0; trial < 5000; trial++) {
    int n = 1 + (int)below(MAX_SEGMENTS);
    int kind = (int)below(5);
    header_t common = header(1 + below(3), below(GUARD_ID));
    header_t *p[MAX_SEGMENTS], *e[MAX_SEGMENTS];
    header_t *at = heap;
    for (int i = 0; i < n; i++) {
      uintnat words;
      switch (below(8)) {
      case 0: words = 0; break;
      case 1: words = Whsize_wosize(1 + below(Max_young_wosize)); break;
      default: words = SEGMENT_WORDS / 2 + below(SEGMENT_WORDS / 2);
      }
      p[i] = at;
      e[i] = at + words;
      fill(at, words, kind, i, common);
      at += words;
    }
    for (uintnat i = 0; i < GUARD_WORDS; i++)
      at[i] = header(1, GUARD_ID);
    memset(ref, 0, sizeof ref);
    for (int i = 0; i < n; i++) {
      for (header_t *q = p[i]; q < e[i]; q += Whsize_hd(*q)) {
        ref[Reserved_hd(*q)] += CAML_POINTS_PACK_ONE + Wosize_hd(*q);
        blocks++;
      }
    }
    memset(m, 0, IDS * sizeof m[0]);
    count_segments(m, p, e, n);
    for (int id = 0; id < IDS; id++) {
      if (m[id] != ref[id]) {
        printf("trial %d (%d segments, layout %d): id %d counted "
               "%llu blocks %llu words, one by one %llu blocks %llu words\n",
               trial, n, kind, id,
               (unsigned long long)(m[id] >> CAML_POINTS_PACK_SHIFT),
               (unsigned long long)(m[id] & (CAML_POINTS_PACK_ONE - 1)),
               (unsigned long long)(ref[id] >> CAML_POINTS_PACK_SHIFT),
               (unsigned long long)(ref[id] & (CAML_POINTS_PACK_ONE - 1)));
        return 1;
      }
    }
  }
  printf("walk_check: %llu blocks counted as one by one\n",
         (unsigned long long)blocks);
  return 0;
}
