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
 *    bitmap with one bit per two heap words (caml/memprof_visited.h:
 *    a bitmap per MiB, 1/128 of the heap, found by two loads). The
 *    GC's own colours and the program's heap are left
 *    as they were, so nothing needs undoing and a failure half-way
 *    (out of memory) only means falling back to the GC.
 * 4. The walk is exact only when nothing else can run or hide
 *    references: it is used only when the calling domain is the only
 *    one running and no ephemeron was ever created (their data are
 *    reachable only while their keys are, which the GC resolves
 *    across domains' lists, including orphaned ones). Otherwise, or
 *    when OCAMLMEMPROF says live=gc, the tracker lets two major cycles
 *    decide.
 * 5. Memory at exit. The part of the minor heap below its allocation
 *    pointer holds nothing, so its whole pages are handed back to the
 *    system (caml_memprof_release_minor_free) when the tracker finishes,
 *    and again here once the walk has emptied the minor heap, before
 *    the visited set and the profile's sorting and rendering take memory
 *    of their own: they reuse those pages rather than raise the
 *    program's peak (the default minor heap is 2 MiB). A later
 *    allocation there finds zeroed pages, which it overwrites. Not in
 *    the debug runtime, which fills free minor words with a pattern and
 *    checks it when they are allocated.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdlib.h>
#ifndef _WIN32
#include <sys/mman.h>
#include <unistd.h>
#endif
#include "caml/camlatomic.h"
#include "caml/domain.h"
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/finalise.h"
#include "caml/globroots.h"
#include "caml/memprof.h"
#include "caml/memprof_points.h"
#include "caml/memprof_reach.h"
#include "caml/memprof_visited.h"
#include "caml/minor_gc.h"
#include "caml/mlvalues.h"
#include "caml/roots.h"
#include "caml/shared_heap.h"

atomic_uintnat caml_memprof_ephemerons_created = 0;

/**** Visited set (caml/memprof_visited.h): adding and freeing ****/

/* The directories are mapped, not calloc'd: a fresh mapping's pages cost
 * nothing until an entry on them is used, where calloc may clear all of
 * it in the malloc heap. */
static void *zeroed_map(size_t bytes)
{
#ifndef _WIN32
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
#else
  return calloc(1, bytes);
#endif
}

static void zeroed_unmap(void *p, size_t bytes)
{
#ifndef _WIN32
  if (p != NULL) munmap(p, bytes);
#else
  (void)bytes;
  free(p);
#endif
}

#define DIRS_BYTES (CAML_MEMPROF_DIRS * sizeof(uint64_t **))
#define DIR_BYTES (CAML_MEMPROF_DIR_SIZE * sizeof(uint64_t *))

Caml_noinline uint64_t *
caml_memprof_visited_add_region(struct caml_memprof_visited *v, uintnat hp)
{
  uintnat d = hp >> CAML_MEMPROF_DIR_SHIFT;
  if (d >= CAML_MEMPROF_DIRS) { v->failed = true; return NULL; }
  if (v->dirs == NULL) {
    v->dirs = zeroed_map(DIRS_BYTES);
    if (v->dirs == NULL) { v->failed = true; return NULL; }
  }
  if (v->dirs[d] == NULL) {
    v->dirs[d] = zeroed_map(DIR_BYTES);
    if (v->dirs[d] == NULL) { v->failed = true; return NULL; }
  }
  if (v->nbitmaps == v->bitmaps_capacity) {
    size_t capacity = v->bitmaps_capacity ? 2 * v->bitmaps_capacity : 64;
    uint64_t **grown = realloc(v->bitmaps, capacity * sizeof *grown);
    if (grown == NULL) { v->failed = true; return NULL; }
    v->bitmaps = grown;
    v->bitmaps_capacity = capacity;
  }
  uint64_t *bits = calloc(CAML_MEMPROF_REGION_BITS / 64, sizeof *bits);
  if (bits == NULL) { v->failed = true; return NULL; }
  v->bitmaps[v->nbitmaps++] = bits;
  v->dirs[d][(hp >> CAML_MEMPROF_REGION_SHIFT) & (CAML_MEMPROF_DIR_SIZE - 1)]
    = bits;
  return bits;
}

void caml_memprof_visited_clear(struct caml_memprof_visited *v)
{
  for (size_t i = 0; i < v->nbitmaps; i++) free(v->bitmaps[i]);
  free(v->bitmaps);
  if (v->dirs != NULL) {
    for (uintnat d = 0; d < CAML_MEMPROF_DIRS; d++)
      zeroed_unmap(v->dirs[d], DIR_BYTES);
    zeroed_unmap(v->dirs, DIRS_BYTES);
  }
  *v = (struct caml_memprof_visited){ 0 };
}

struct walk {
  struct caml_memprof_visited vis;
  struct range { value *start, *end; } *stack;   /* fields to scan */
  size_t depth, stack_capacity;
  bool failed;                        /* out of memory: the walk stops */
};

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

Caml_memprof_walk_inline bool push(struct walk *w, value *start, value *end)
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
Caml_memprof_walk_inline bool enter(struct walk *w, value v, value **start, value **end)
{
  header_t hd = Hd_val(v);
  if (Tag_hd(hd) == Infix_tag) {
    v -= Infix_offset_hd(hd);
    hd = Hd_val(v);
  }
  if (Has_status_hd(hd, NOT_MARKABLE)) return false;
  if (!caml_memprof_first_visit(&w->vis, (uintnat)Hp_val(v))) return false;
  caml_memprof_points_live(hd);
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
  while (w->depth > 0 && !w->failed && !w->vis.failed) {
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
  return caml_memprof_was_visited(&w->vis, (uintnat)Hp_val(block));
}

/**** The visited set, for memprof_snapshot.c's walk ****/

bool caml_memprof_visited_has(value block, void *v)
{
  return caml_memprof_was_visited(v, (uintnat)Hp_val(block));
}

/* Design 5: the whole pages of the free part of the calling domain's
 * minor heap, [young_start, young_ptr), handed back. */
void caml_memprof_release_minor_free(void)
{
#if !defined(_WIN32) && !defined(DEBUG)
  caml_domain_state *d = Caml_state;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)d->young_start + page - 1) & ~(page - 1);
  uintptr_t hi = (uintptr_t)d->young_ptr & ~(page - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED);
#endif
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
  caml_memprof_release_minor_free();
  caml_memprof_points_live_begin();

  struct walk w = { 0 };
  caml_domain_state *d = Caml_state;
  caml_do_roots(visit_root, 0, &w, d, 0);
  caml_scan_global_roots(visit_root, &w);
  struct finalisable *first = &d->final_info->first;
  for (uintnat i = 0; i < first->young; i++) {
    visit_root(&w, first->table[i].val, NULL);
  }
  drain(&w);

  bool judged = !w.failed && !w.vis.failed;
  if (judged) caml_memprof_judge_major(reachable, &w);
  caml_memprof_visited_clear(&w.vis);
  free(w.stack);
  return judged;
}
