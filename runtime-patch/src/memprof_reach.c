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
 *    bitmap with one bit per heap word, kept per 4 KiB page in an open
 *    addressing table keyed by page number. The GC's own colours and
 *    the program's heap are left as they were, so nothing needs
 *    undoing and a failure half-way (out of memory) only means falling
 *    back to the GC.
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

/**** Visited set: one bit per heap word, per 4 KiB page ****/

#define PAGE_SHIFT 12
#define PAGE_WORDS (1 << (PAGE_SHIFT - 3))

struct page {
  uintnat key;                        /* page number + 1; 0 = empty */
  uint64_t bits[PAGE_WORDS / 64];
};

struct walk {
  struct page *pages;
  size_t capacity;                    /* a power of 2, at most half full */
  size_t used;
  /* The page of the last block visited: list cells and tree nodes are
   * laid out in runs, so most lookups end here. */
  uintnat last_key;
  uint64_t *last_bits;
  struct range { value *start, *end; } *stack;   /* fields to scan */
  size_t depth, stack_capacity;
  bool failed;                        /* out of memory: the walk stops */
};

Caml_inline size_t page_slot(uintnat key, size_t capacity)
{
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (capacity - 1);
}

/* The slot for `key` in `pages`: where it is, or the empty slot where
 * it belongs. */
static struct page *page_find(struct page *pages, size_t capacity,
                              uintnat key)
{
  size_t mask = capacity - 1;
  for (size_t j = page_slot(key, capacity);; j = (j + 1) & mask) {
    if (pages[j].key == key || pages[j].key == 0) return &pages[j];
  }
}

static bool pages_grow(struct walk *w)
{
  size_t capacity = w->capacity ? 2 * w->capacity : 4096;
  struct page *pages = calloc(capacity, sizeof *pages);
  if (pages == NULL) return false;
  for (size_t i = 0; i < w->capacity; i++) {
    if (w->pages[i].key != 0) {
      *page_find(pages, capacity, w->pages[i].key) = w->pages[i];
    }
  }
  free(w->pages);
  w->pages = pages;
  w->capacity = capacity;
  w->last_key = 0;
  return true;
}

/* The bitmap of page `key`, added if `add`; NULL if absent (or if it
 * could not be added, which sets `failed`). Becomes the last page. */
static Caml_noinline uint64_t *page_bits(struct walk *w, uintnat key,
                                         bool add)
{
  struct page *p =
    w->capacity ? page_find(w->pages, w->capacity, key) : NULL;
  if (p == NULL || p->key == 0) {
    if (!add) return NULL;
    if (2 * (w->used + 1) > w->capacity) {
      if (!pages_grow(w)) { w->failed = true; return NULL; }
      p = page_find(w->pages, w->capacity, key);
    }
    p->key = key;
    w->used++;
  }
  w->last_key = key;
  w->last_bits = p->bits;
  return p->bits;
}

/* The bitmap word holding the visited bit of the header at `hp` in its
 * page's `bits`, and that bit in `*bit`. */
Caml_inline uint64_t *bit_of(uint64_t *bits, uintnat hp, uint64_t *bit)
{
  uintnat word = (hp >> 3) & (PAGE_WORDS - 1);
  *bit = (uint64_t)1 << (word & 63);
  return &bits[word >> 6];
}

/* Sets the visited bit of the block whose header is at `hp`; true if it
 * was clear. */
Caml_inline bool first_visit(struct walk *w, uintnat hp)
{
  uintnat key = (hp >> PAGE_SHIFT) + 1;
  uint64_t *bits = key == w->last_key ? w->last_bits
                                      : page_bits(w, key, true);
  if (bits == NULL) return false;
  uint64_t bit, *cell = bit_of(bits, hp, &bit);
  if (*cell & bit) return false;
  *cell |= bit;
  return true;
}

/**** The walk ****/

static bool push(struct walk *w, value *start, value *end)
{
  if (w->depth == w->stack_capacity) {
    size_t capacity = w->stack_capacity ? 2 * w->stack_capacity : 1024;
    struct range *stack = realloc(w->stack, capacity * sizeof *stack);
    if (stack == NULL) { w->failed = true; return false; }
    w->stack = stack;
    w->stack_capacity = capacity;
  }
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
Caml_inline bool enter(struct walk *w, value v, value **start, value **end)
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
  uint64_t *bits = page_bits(w, (hp >> PAGE_SHIFT) + 1, false);
  if (bits == NULL) return false;
  uint64_t bit;
  return (*bit_of(bits, hp, &bit) & bit) != 0;
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
  free(w.pages);
  free(w.stack);
  return judged;
}
