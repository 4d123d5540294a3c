/* memprof-ci: which sampled blocks are reachable at exit.
 *
 * 1. Purpose. The built-in tracker reports a block as live at exit when
 *    the program can still reach it. The GC decides that only at the
 *    end of a major cycle whose marking started after the program
 *    stopped, so asking the GC costs the rest of the cycle in progress
 *    plus a full one: two markings and sweeps of the whole heap (for a
 *    program keeping 50 MB, a tenth of its run). This file answers the
 *    same question with one read-only walk of what is reachable, then
 *    hands the verdict to memprof (caml_memprof_judge_major), which
 *    reports unreachable blocks as collected exactly as a cycle end
 *    would. Interface: caml/memprof_reach.h; the caller is
 *    memprof_tracker.c, and weak.c sets the ephemeron flag.
 * 2. The walk follows the major GC's marking rules: roots are those the
 *    GC darkens at a cycle start (caml_do_roots without finalised
 *    values, caml_scan_global_roots), plus the values of
 *    `Gc.finalise` (not `finalise_last`) finalisers, which the GC
 *    resurrects before a cycle ends. Infix pointers count as their
 *    closure, a closure's code pointers are skipped, a continuation's
 *    fiber stack is scanned, blocks with a tag at or above No_scan_tag
 *    have no fields to follow, and static (NOT_MARKABLE) blocks are
 *    not entered, as the GC does not enter them.
 * 3. The heap is never written: visited blocks are recorded in a side
 *    bitmap with one bit per two heap words, one bitmap per 1 MiB region
 *    of address space, found through a small open addressing table
 *    keyed by region number (bdd 28's 18 MB heap spans 18 regions, so
 *    the table stays in the first-level cache and the bitmaps, 1/128 of
 *    the heap, in the second). Two words suffice, as only the bit of a
 *    block's header is ever set or read: the smallest block off the
 *    minor heap is a header and one field, so no two headers share a
 *    pair of words. The GC's own colours and the program's heap
 *    are left as they were, so nothing needs undoing and a failure
 *    half-way (out of memory) only means falling back to the GC.
 * 4. The walk is exact only when nothing else can run or hide
 *    references: it is used only when the calling domain is the only
 *    one running and no ephemeron was ever created (their data are
 *    reachable only while their keys are, which the GC resolves
 *    across domains' lists, including orphaned ones). Otherwise, or
 *    when OCAMLMEMPROF says live=gc, the tracker lets two major cycles
 *    decide.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdlib.h>
#include "caml/camlatomic.h"
#include "caml/domain.h"
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/finalise.h"
#include "caml/globroots.h"
#include "caml/memprof.h"
#include "caml/memprof_reach.h"
#include "caml/minor_gc.h"
#include "caml/mlvalues.h"
#include "caml/roots.h"
#include "caml/shared_heap.h"

atomic_uintnat caml_memprof_ephemerons_created = 0;

/* The steps of the walk's loop must be inlined into it, whatever the
 * compiler's size heuristics say: a call per visited block costs as
 * much as the visit. */
#if defined(__GNUC__)
#define Walk_inline static inline __attribute__((always_inline))
#else
#define Walk_inline Caml_inline
#endif

/**** Visited set: one bit per two heap words, per 1 MiB region ****/

#define REGION_SHIFT 20
#define GRANULE_SHIFT 4                 /* two words */
#define REGION_BITS ((uintnat)1 << (REGION_SHIFT - GRANULE_SHIFT))

struct region {
  uintnat key;                        /* region number + 1; 0 = empty */
  uint64_t *bits;                     /* REGION_BITS bits */
};

struct walk {
  struct region *regions;
  size_t capacity;                    /* a power of 2, at most half full */
  size_t used;
  /* The region of the last block visited: most blocks of a heap lie in
   * the regions of its pools, so most lookups end here. */
  uintnat last_key;
  uint64_t *last_bits;
  struct range { value *start, *end; } *stack;   /* fields to scan */
  size_t depth, stack_capacity;
  bool failed;                        /* out of memory: the walk stops */
};

Caml_inline size_t region_slot(uintnat key, size_t capacity)
{
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & (capacity - 1);
}

/* The slot for `key` in `regions`: where it is, or the empty slot where
 * it belongs. */
Caml_inline struct region *region_find(struct region *regions,
                                       size_t capacity, uintnat key)
{
  size_t mask = capacity - 1;
  for (size_t j = region_slot(key, capacity);; j = (j + 1) & mask) {
    if (regions[j].key == key || regions[j].key == 0) return &regions[j];
  }
}

static bool regions_grow(struct walk *w)
{
  size_t capacity = w->capacity ? 2 * w->capacity : 64;
  struct region *regions = calloc(capacity, sizeof *regions);
  if (regions == NULL) return false;
  for (size_t i = 0; i < w->capacity; i++) {
    if (w->regions[i].key != 0) {
      *region_find(regions, capacity, w->regions[i].key) = w->regions[i];
    }
  }
  free(w->regions);
  w->regions = regions;
  w->capacity = capacity;
  return true;
}

/* Adds region `key` (absent) with a clear bitmap; NULL, with `failed`
 * set, when memory runs out. */
static Caml_noinline uint64_t *region_add(struct walk *w, uintnat key)
{
  if (2 * (w->used + 1) > w->capacity && !regions_grow(w)) {
    w->failed = true;
    return NULL;
  }
  uint64_t *bits = calloc(REGION_BITS / 64, sizeof *bits);
  if (bits == NULL) { w->failed = true; return NULL; }
  struct region *r = region_find(w->regions, w->capacity, key);
  r->key = key;
  r->bits = bits;
  w->used++;
  return bits;
}

/* The bitmap of region `key`, added if `add`; NULL if absent (or if it
 * could not be added, which sets `failed`). Becomes the last region. */
Walk_inline uint64_t *region_bits(struct walk *w, uintnat key, bool add)
{
  if (key == w->last_key) return w->last_bits;
  uint64_t *bits = NULL;
  if (w->capacity) {
    struct region *r = region_find(w->regions, w->capacity, key);
    if (r->key != 0) bits = r->bits;
  }
  if (bits == NULL) {
    if (!add) return NULL;
    bits = region_add(w, key);
    if (bits == NULL) return NULL;
  }
  w->last_key = key;
  w->last_bits = bits;
  return bits;
}

/* The bitmap word holding the visited bit of the header at `hp` in its
 * region's `bits`, and that bit in `*bit`. */
Caml_inline uint64_t *bit_of(uint64_t *bits, uintnat hp, uint64_t *bit)
{
  uintnat granule = (hp >> GRANULE_SHIFT) & (REGION_BITS - 1);
  *bit = (uint64_t)1 << (granule & 63);
  return &bits[granule >> 6];
}

/* Sets the visited bit of the block whose header is at `hp`; true if it
 * was clear. */
Walk_inline bool first_visit(struct walk *w, uintnat hp)
{
  uint64_t *bits = region_bits(w, (hp >> REGION_SHIFT) + 1, true);
  if (bits == NULL) return false;
  uint64_t bit, *cell = bit_of(bits, hp, &bit);
  if (*cell & bit) return false;
  *cell |= bit;
  return true;
}

static void free_regions(struct walk *w)
{
  for (size_t i = 0; i < w->capacity; i++) free(w->regions[i].bits);
  free(w->regions);
}

/**** The walk ****/

static Caml_noinline bool stack_grow(struct walk *w)
{
  size_t capacity = w->stack_capacity ? 2 * w->stack_capacity : 1024;
  struct range *stack = realloc(w->stack, capacity * sizeof *stack);
  if (stack == NULL) { w->failed = true; return false; }
  w->stack = stack;
  w->stack_capacity = capacity;
  return true;
}

Walk_inline bool push(struct walk *w, value *start, value *end)
{
  if (w->depth == w->stack_capacity && !stack_grow(w)) return false;
  w->stack[w->depth++] = (struct range){ start, end };
  return true;
}

static void visit_root(void *data, value v, volatile value *unused);

/* Out of line, so that `enter` stays small enough to inline. */
static Caml_noinline void scan_fiber(struct walk *w, value cont)
{
  struct stack_info *stk = Ptr_val(Field(cont, 0));
  if (stk != NULL) caml_scan_stack(visit_root, 0, w, stk, 0);
}

/* Visits block `v` (not young). True, with its fields in
 * [*start, *end), if it was not visited before and has fields to
 * follow. A continuation's stack is scanned here, as roots. */
Walk_inline bool enter(struct walk *w, value v, value **start, value **end)
{
  header_t hd = Hd_val(v);
  if (Tag_hd(hd) == Infix_tag) {
    v -= Infix_offset_hd(hd);
    hd = Hd_val(v);
  }
  if (Has_status_hd(hd, NOT_MARKABLE)) return false;
  if (!first_visit(w, (uintnat)Hp_val(v))) return false;
  tag_t tag = Tag_hd(hd);
  if (tag >= No_scan_tag) return false;
  if (tag == Cont_tag) {
    scan_fiber(w, v);
    return false;
  }
  *start = Op_val(v);
  *end = *start + Wosize_hd(hd);
  if (tag == Closure_tag) *start += Start_env_closinfo(Closinfo_val(v));
  return *start < *end;
}

static void visit_root(void *data, value v, volatile value *unused)
{
  (void)unused;
  struct walk *w = data;
  value *start, *end;
  if (Is_block(v) && !Is_young(v) && enter(w, v, &start, &end)) {
    push(w, start, end);
  }
}

/* Depth first: the rest of a block's fields waits on the stack while
 * the first new child is scanned, so a list is walked without pushing.
 * No field is young: the minor heap was emptied first. */
static void drain(struct walk *w)
{
  while (w->depth > 0 && !w->failed) {
    struct range r = w->stack[--w->depth];
    while (r.start < r.end) {
      value v = *r.start++;
      value *start, *end;
      if (!Is_block(v) || !enter(w, v, &start, &end)) continue;
      if (r.start < r.end && !push(w, r.start, r.end)) return;
      r.start = start;
      r.end = end;
    }
  }
}

static bool reachable(value block, void *data)
{
  struct walk *w = data;
  uintnat hp = (uintnat)Hp_val(block);
  uint64_t *bits = region_bits(w, (hp >> REGION_SHIFT) + 1, false);
  if (bits == NULL) return false;
  uint64_t bit;
  return (*bit_of(bits, hp, &bit) & bit) != 0;
}

/**** The visited set, for memprof_snapshot.c's walk ****/

struct caml_memprof_visited { struct walk w; };

struct caml_memprof_visited *caml_memprof_visited_new(void)
{
  return calloc(1, sizeof(struct caml_memprof_visited));
}

bool caml_memprof_visited_first(struct caml_memprof_visited *v, value block)
{
  return first_visit(&v->w, (uintnat)Hp_val(block));
}

bool caml_memprof_visited_failed(const struct caml_memprof_visited *v)
{
  return v->w.failed;
}

bool caml_memprof_visited_has(value block, void *v)
{
  return reachable(block, &((struct caml_memprof_visited *)v)->w);
}

void caml_memprof_visited_free(struct caml_memprof_visited *v)
{
  if (v == NULL) return;
  free_regions(&v->w);
  free(v->w.stack);
  free(v);
}

bool caml_memprof_judge_by_reachability(void)
{
  if (!caml_domain_alone()
      || atomic_load_relaxed(&caml_memprof_ephemerons_created)) {
    return false;
  }
  /* Young survivors move to the major heap (memprof settles young
   * entries there); the walk then sees one heap. */
  caml_empty_minor_heaps_once();

  struct walk w = { 0 };
  caml_domain_state *d = Caml_state;
  caml_do_roots(visit_root, 0, &w, d, 0);
  caml_scan_global_roots(visit_root, &w);
  struct finalisable *first = &d->final_info->first;
  for (uintnat i = 0; i < first->young; i++) {
    visit_root(&w, first->table[i].val, NULL);
  }
  drain(&w);

  bool judged = !w.failed;
  if (judged) caml_memprof_judge_major(reachable, &w);
  free_regions(&w);
  free(w.stack);
  return judged;
}
