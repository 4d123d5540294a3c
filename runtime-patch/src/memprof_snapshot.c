/* memprof-ci: a heap snapshot at exit (or in a forked copy of the
 * program, on demand), with retainer paths.
 *
 * 1. Purpose. With OCAMLMEMPROF=...,snapshot=exit the exit's judgment
 *    of reachability (memprof_reach.c) is made by this file's walk
 *    instead, which answers the same question and also records, for
 *    the sampled (tracked) blocks it finds reachable, why: for the
 *    heaviest sites (by live samples; at most `snapshot_sites`, 20 by
 *    default) a shortest path from a root to a block of the site, and
 *    how many of the site's live samples and words hang from that
 *    path's root and first hop. The profile carries it as its
 *    `snapshot` section (runtime-patch/format/profile-format.md).
 *    Interface: caml/memprof_snapshot.h; the caller is
 *    memprof_tracker.c (the finish), the renderer memprof_profile.c.
 *    A snapshot taken while the program runs (snapshot=signal, call) is
 *    the same finish in a forked copy of the program
 *    (memprof_tracker.c, design 10); its section's `at` says so.
 * 2. The walk is breadth first from all roots at once: every root is
 *    at depth 0 and a block is first visited from a block of the
 *    smallest depth, so the first block of a site the walk meets, in
 *    its order, is one of that site's blocks nearest to a root, and
 *    the parents recorded on the way give a shortest path to it. The
 *    roots, the rules for following fields and the visited set
 *    (caml/memprof_visited.h) are those of memprof_reach.c (its design
 *    2 and 3), so the set of blocks visited, which then judges the
 *    tracked blocks, is the same. A field's block enters the queue on
 *    its header's bit alone, its header unread: the header is read when
 *    the block's turn comes, fetched (prefetch) while the entries
 *    before it are scanned, so that the walk's one cache miss per block
 *    overlaps others instead of stalling it. Only then is an infix
 *    pointer taken to its closure (which enters, with the infix entry's
 *    parent, unless its own bit is set) and a static block skipped: an
 *    infix header's bit lies inside its closure, where no other
 *    block's header is, so setting it changes no judgment. The paths
 *    shown are read back through the parents together (read_paths),
 *    each queue entry once.
 * 3. Memory, all of it C memory (malloc), none on the OCaml heap, and no
 *    collection run or moved (the minor heap is emptied first, as
 *    without a snapshot):
 *    - the visited bitmap of memprof_reach.c: 1/128 of each 1 MiB
 *      region the heap occupies, as without a snapshot;
 *    - the queue, which is also the parent map: 16 bytes for each
 *      block the walk enters (its address, the queue index of its
 *      parent and that of its root): every reachable block, and each
 *      static block or infix pointer a field leads to first; kept
 *      until the end since paths are read back through it;
 *    - 16 bytes per root whose value is first visited from it;
 *    - the tracked blocks' table: 32 bytes per tracked major block, at
 *      most half full (so at most 64 per block), and 32 bytes per
 *      tracked block found reachable;
 *    - the table's filter, probed for each block the walk visits: 2
 *      bytes per tracked major block (16 bits; at least 512 bytes, at
 *      most 512 KiB);
 *    - at rendering, 24 bytes per raw stack of the profile and 80 per
 *      reachable tracked block, to group them by site, and 4 bytes per
 *      hop of each path shown, twice at most (read back, then copied
 *      per site).
 *    Each array doubles when full, so for a moment it holds its old and
 *    new copies. The walk's arrays (all but the bitmap and the
 *    rendering's) are bounded by `snapshot_mem` (OCAMLMEMPROF, 1 GiB by
 *    default), counting both copies while one grows. The queue's indices
 *    are 32 bits: 2^32 - 1 or more blocks entered, a growth past
 *    snapshot_mem or a failed allocation ends the snapshot, which is
 *    then reported as not taken with the reason, and the exit falls
 *    back to the walk without a snapshot. The section's
 *    `table_bytes` is the largest sum of these arrays' capacities the
 *    walk reached (the bitmap not included).
 * 4. Roots, named by kind: a field of a compilation unit's module
 *    block (native code: the units of caml_globals, named from their
 *    `caml<Unit>.gc_roots` symbol through dladdr, which sees it as
 *    OCaml executables export their symbols), a frame of the current
 *    fiber's OCaml stack (native code: its function and location from
 *    the frame descriptor's debug information), a C local root
 *    (CAMLparam/CAMLlocal), a C global root (caml_register_*_root:
 *    in bytecode the global data too), a finalisation function or a
 *    value under `Gc.finalise`; anything else the root scan reaches
 *    (another systhread's stack or locals, a stack's effect handlers,
 *    a bytecode stack slot) is of kind "other". A fiber's stack held
 *    by a continuation is a hop (the continuation), not a root.
 * 5. The walk runs only where memprof_reach.c's does (one running
 *    domain, no ephemeron ever created); elsewhere the snapshot is
 *    reported as not taken, with the reason.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE                     /* dladdr */
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(NATIVE_CODE) && !defined(_WIN32)
#include <dlfcn.h>
#endif
#include "caml/backtrace_prim.h"
#include "caml/camlatomic.h"
#include "caml/domain.h"
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/finalise.h"
#include "caml/globroots.h"
#include "caml/memory.h"
#include "caml/memprof_points.h"
#include "caml/memprof.h"
#include "caml/memprof_env.h"
#include "caml/memprof_profile.h"
#include "caml/memprof_reach.h"
#include "caml/memprof_snapshot.h"
#include "caml/memprof_tracker.h"
#include "caml/memprof_visited.h"
#include "caml/minor_gc.h"
#include "caml/mlvalues.h"
#include "caml/roots.h"
#include "caml/shared_heap.h"
#ifdef NATIVE_CODE
#include "caml/frame_descriptors.h"
#include "caml/stack.h"
#endif

#if defined(__GNUC__)
#define Prefetch(p) __builtin_prefetch(p)
#else
#define Prefetch(p) ((void)(p))
#endif

#define NONE UINT32_MAX
#define PATH_HEAD 24                   /* hops kept from a long path's */
#define PATH_TAIL 8                    /* start, and from its end */

enum root_kind {
  ROOT_GLOBAL,          /* a module field, or a C global root (decided
                           when rendered, from the root's address) */
  ROOT_STACK,           /* an OCaml frame (`where` its descriptor) */
  ROOT_C_LOCAL,
  ROOT_FINALISER,
  ROOT_FINALISED,
  ROOT_OTHER
};

struct qent { value v; uint32_t parent, root; };
struct rootrec { uint32_t kind; const void *where; };
struct tracked {
  value block;                          /* 0: empty slot */
  const atomic_uintnat *site;
  uintnat samples;
  uintnat found;                        /* target index + 1, or 0 */
};
struct target {
  value block;
  const atomic_uintnat *site;
  uintnat samples;
  uint32_t parent, root;                /* as in qent */
};

struct caml_memprof_snapshot {
  const char *not_taken;                /* why, or NULL when taken */
  struct caml_memprof_visited vis;
  struct qent *q;
  size_t qlen, qcap;
  struct rootrec *roots;
  size_t nroots, rcap;
  struct tracked *tab;
  size_t tcap, tcount;
  uint64_t *filter;                     /* a bit per hash of a tracked */
  unsigned filter_shift;                /* block: 64 - log2(its bits) */
  struct target *targets;
  size_t ntargets, targetcap;
  /* Where the roots being scanned come from (design 4), or the parent
   * of the fields being scanned (a continuation's stack). */
  uint32_t cur_parent, cur_root;
  enum root_kind kind;
  const void *where;
  bool failed;
  size_t bytes, peak_bytes;
  uint64_t limit;                       /* snapshot_mem */
  uintnat reachable;                    /* blocks visited */
};

/**** Memory (design 3) ****/

static const char past_limit[] =
  "its tables would pass snapshot_mem bytes";

/* Whether `new_bytes` more (beside what is held) stay within
 * snapshot_mem; if not, the snapshot fails with the reason. */
static bool within_limit(struct caml_memprof_snapshot *s, size_t new_bytes)
{
  if ((uint64_t)s->bytes + new_bytes <= s->limit) return true;
  s->failed = true;
  s->not_taken = past_limit;
  return false;
}

static void account(struct caml_memprof_snapshot *s, size_t old_bytes,
                    size_t new_bytes)
{
  /* Both copies exist while an array grows. */
  if (s->bytes + new_bytes > s->peak_bytes) {
    s->peak_bytes = s->bytes + new_bytes;
  }
  s->bytes = s->bytes - old_bytes + new_bytes;
}

/* Room for one more element in `*arr` (`*cap` of `size` bytes each,
 * `len` used); false, with `failed` set, when out of memory or past
 * the 32-bit indices. */
static bool room(struct caml_memprof_snapshot *s, void **arr, size_t *cap,
                 size_t len, size_t size)
{
  if (len < *cap) return true;
  size_t ncap = *cap ? 2 * *cap : 1024;
  if (ncap > (size_t)NONE) ncap = NONE;
  if (len >= ncap) {
    s->failed = true;
    s->not_taken = "more than 2^32 - 2 blocks to record";
    return false;
  }
  if (!within_limit(s, ncap * size)) return false;
  void *a = realloc(*arr, ncap * size);
  if (a == NULL) {
    s->failed = true;
    s->not_taken = "out of memory";
    return false;
  }
  account(s, *cap * size, ncap * size);
  *arr = a;
  *cap = ncap;
  return true;
}

/**** The tracked blocks ****/

Caml_inline size_t slot_of(value v, size_t cap)
{
  uint64_t h = (uint64_t)v * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 32) & (cap - 1);
}

static struct tracked *tracked_find(struct caml_memprof_snapshot *s,
                                    value v)
{
  if (s->tcap == 0) return NULL;
  size_t mask = s->tcap - 1;
  for (size_t j = slot_of(v, s->tcap);; j = (j + 1) & mask) {
    if (s->tab[j].block == v) return &s->tab[j];
    if (s->tab[j].block == 0) return NULL;
  }
}

/* The filter (design 3): most visited blocks are not tracked, and its
 * bit, in an array a few times smaller than the table, says so without
 * a probe of the table. */
Caml_inline uint64_t filter_hash(value v, unsigned shift)
{
  return ((uint64_t)v * 0x9E3779B97F4A7C15ull) >> shift;
}

Caml_inline bool maybe_tracked(const struct caml_memprof_snapshot *s,
                               value v)
{
  uint64_t h = filter_hash(v, s->filter_shift);
  return (s->filter[h >> 6] >> (h & 63)) & 1;
}

/* Sixteen bits per tracked block, from 2^12 to 2^22 bits: about one
 * untracked block in sixteen or fewer passes to the table. */
static bool filter_build(struct caml_memprof_snapshot *s)
{
  unsigned log2 = 12;
  while (log2 < 22 && ((size_t)1 << log2) < 16 * s->tcount) log2++;
  size_t words = ((size_t)1 << log2) / 64;
  if (!within_limit(s, words * sizeof *s->filter)) return false;
  s->filter = calloc(words, sizeof *s->filter);
  if (s->filter == NULL) {
    s->failed = true;
    s->not_taken = "out of memory";
    return false;
  }
  account(s, 0, words * sizeof *s->filter);
  s->filter_shift = 64 - log2;
  for (size_t i = 0; i < s->tcap; i++) {
    if (s->tab[i].block == 0) continue;
    uint64_t h = filter_hash(s->tab[i].block, s->filter_shift);
    s->filter[h >> 6] |= (uint64_t)1 << (h & 63);
  }
  return true;
}

static bool tracked_grow(struct caml_memprof_snapshot *s)
{
  size_t ncap = s->tcap ? 2 * s->tcap : 256;
  if (!within_limit(s, ncap * sizeof(struct tracked))) return false;
  struct tracked *t = calloc(ncap, sizeof *t);
  if (t == NULL) {
    s->failed = true;
    s->not_taken = "out of memory";
    return false;
  }
  account(s, 0, ncap * sizeof *t);
  for (size_t i = 0; i < s->tcap; i++) {
    if (s->tab[i].block == 0) continue;
    size_t j = slot_of(s->tab[i].block, ncap);
    while (t[j].block != 0) j = (j + 1) & (ncap - 1);
    t[j] = s->tab[i];
  }
  account(s, s->tcap * sizeof *t, 0);
  free(s->tab);
  s->tab = t;
  s->tcap = ncap;
  return true;
}

static void add_tracked(value block, value data, size_t samples, void *arg)
{
  struct caml_memprof_snapshot *s = arg;
  if (s->failed) return;
  if (2 * (s->tcount + 1) > s->tcap && !tracked_grow(s)) return;
  size_t j = slot_of(block, s->tcap);
  while (s->tab[j].block != 0 && s->tab[j].block != block) {
    j = (j + 1) & (s->tcap - 1);
  }
  if (s->tab[j].block == block) {       /* one block, sampled twice */
    s->tab[j].samples += samples;
    return;
  }
  s->tab[j] = (struct tracked){ block, caml_memprof_tracker_site_counts(data),
                                samples, 0 };
  s->tcount++;
}

/**** The walk (design 2) ****/

/* The block a root value `v` leads the walk to (an infix pointer's
 * closure), or 0 when the walk does not enter it: an immediate, a
 * young or a static block. */
Caml_inline value target_of(value v)
{
  if (!Is_block(v) || Is_young(v)) return 0;
  header_t hd = Hd_val(v);
  if (Tag_hd(hd) == Infix_tag) v -= Infix_offset_hd(hd);
  return Has_status_hd(Hd_val(v), NOT_MARKABLE) ? 0 : v;
}

/* Block `v`, whose bit was just set, if it is tracked: a target, met
 * from queue entry `parent` under root `root`. */
Caml_memprof_walk_inline void claim(struct caml_memprof_snapshot *s, value v,
                                    uint32_t parent, uint32_t root)
{
  if (!maybe_tracked(s, v)) return;
  struct tracked *t = tracked_find(s, v);
  if (t == NULL) return;
  if (!room(s, (void **)&s->targets, &s->targetcap, s->ntargets,
            sizeof *s->targets))
    return;
  s->targets[s->ntargets++] =
    (struct target){ v, t->site, t->samples, parent, root };
  t->found = s->ntargets;
}

/* `v`, whose bit was just set, joins the queue, found from queue entry
 * `parent` under root `root` (NONE, NONE: a root itself). Its header is
 * not read here (design 2). */
Caml_memprof_walk_inline void enter(struct caml_memprof_snapshot *s, value v,
                                    uint32_t parent, uint32_t root)
{
  if (parent == NONE) {
    if (!room(s, (void **)&s->roots, &s->rcap, s->nroots, sizeof *s->roots))
      return;
    root = (uint32_t)s->nroots;
    s->roots[s->nroots++] = (struct rootrec){ s->kind, s->where };
  }
  claim(s, v, parent, root);
  if (s->qlen == s->qcap
      && !room(s, (void **)&s->q, &s->qcap, s->qlen, sizeof *s->q)) return;
  s->q[s->qlen++] = (struct qent){ v, parent, root };
}

/* A root, or a value found on a continuation's stack. */
static void visit(struct caml_memprof_snapshot *s, value v, uint32_t parent,
                  uint32_t root)
{
  v = target_of(v);
  if (v != 0 && caml_memprof_first_visit(&s->vis, (uintnat)Hp_val(v))) {
    enter(s, v, parent, root);
  }
}

static void visit_action(void *data, value v, volatile value *unused)
{
  (void)unused;
  struct caml_memprof_snapshot *s = data;
  if (s->failed) return;
  visit(s, v, s->cur_parent, s->cur_root);
}

static void scan_roots_as(struct caml_memprof_snapshot *s,
                          enum root_kind kind, const void *where)
{
  s->kind = kind;
  s->where = where;
  s->cur_parent = NONE;
  s->cur_root = NONE;
}

#ifdef NATIVE_CODE
/* The current fiber's stacks, as caml_scan_stack scans them, with each
 * frame's descriptor as the root's place. */
static void scan_current_stack(struct caml_memprof_snapshot *s,
                               struct stack_info *stack, value *gc_regs)
{
  caml_frame_descrs *fds = caml_get_frame_descrs();
  for (; stack != NULL; stack = Stack_parent(stack)) {
    char *sp = (char *)stack->sp;
    value *regs = gc_regs;
    while (sp != (char *)Stack_high(stack)) {
      sp = First_frame(sp);
      uintnat retaddr = Saved_return_address(sp);
      while (1) {
        frame_descr *d = caml_find_frame_descr(fds, retaddr);
        if (d == NULL) goto next_stack;
        if (frame_return_to_C(d)) {
          regs = Saved_gc_regs(sp);
          sp += Stack_header_size;
          break;
        }
        scan_roots_as(s, ROOT_STACK, d);
        unsigned short *p = d->live_ofs;
        for (int n = d->num_live; n > 0; n--, p++) {
          int ofs = *p;
          value *root = (ofs & 1) ? regs + (ofs >> 1) : (value *)(sp + ofs);
          visit_action(s, *root, root);
        }
        sp += frame_size(d);
        retaddr = Saved_return_address(sp);
      }
    }
  next_stack:
    scan_roots_as(s, ROOT_OTHER, NULL);
    visit_action(s, Stack_handle_value(stack), NULL);
    visit_action(s, Stack_handle_exception(stack), NULL);
    visit_action(s, Stack_handle_effect(stack), NULL);
    gc_regs = NULL;
  }
}
#endif

/* A global root: its address is its place (design 4). */
static void global_action(void *data, value v, volatile value *root)
{
  struct caml_memprof_snapshot *s = data;
  if (s->failed) return;
  s->where = (const void *)root;
  visit(s, v, NONE, NONE);
}

static void scan_roots(struct caml_memprof_snapshot *s)
{
  caml_domain_state *d = Caml_state;
  scan_roots_as(s, ROOT_C_LOCAL, NULL);
  for (struct caml__roots_block *lr = d->local_roots; lr != NULL;
       lr = lr->next) {
    for (int i = 0; i < lr->ntables; i++) {
      for (int j = 0; j < lr->nitems; j++) {
        value *sp = &lr->tables[i][j];
        if (*sp != 0) visit_action(s, *sp, sp);
      }
    }
  }
#ifdef NATIVE_CODE
  scan_current_stack(s, d->current_stack, d->gc_regs);
#else
  scan_roots_as(s, ROOT_OTHER, NULL);
  caml_scan_stack(visit_action, 0, s, d->current_stack, d->gc_regs);
#endif
  scan_roots_hook hook = atomic_load(&caml_scan_roots_hook);
  scan_roots_as(s, ROOT_OTHER, NULL);
  if (hook != NULL) (*hook)(visit_action, 0, s, d);
  scan_roots_as(s, ROOT_FINALISER, NULL);
  caml_final_do_roots(visit_action, 0, s, d, 0);
  /* The root's address tells a module field from a C global root. */
  s->kind = ROOT_GLOBAL;
  s->cur_parent = NONE;
  caml_scan_global_roots(global_action, s);
  scan_roots_as(s, ROOT_FINALISED, NULL);
  struct finalisable *first = &d->final_info->first;
  for (uintnat i = 0; i < first->young; i++) {
    visit_action(s, first->table[i].val, NULL);
  }
}

/* Breadth first: the queue is scanned in the order blocks entered it.
 * A field's block enters it by its header's bit alone, the header not
 * read (an infix pointer's bit is that of its infix header, a static
 * block's is set too); the entry PREFETCH ahead is fetched while this
 * one is scanned, and its header then says what it is (design 2). */
#define PREFETCH 16

static void drain(struct caml_memprof_snapshot *s)
{
  for (size_t i = 0; i < s->qlen && !s->failed && !s->vis.failed; i++) {
    if (i + PREFETCH < s->qlen) {
      Prefetch((const void *)Hp_val(s->q[i + PREFETCH].v));
    }
    value v = s->q[i].v;
    uint32_t root = s->q[i].root;
    header_t hd = Hd_val(v);
    if (Tag_hd(hd) == Infix_tag) {
      /* Its closure, unless that was entered already. */
      v -= Infix_offset_hd(hd);
      if (!caml_memprof_first_visit(&s->vis, (uintnat)Hp_val(v))) continue;
      s->q[i].v = v;
      hd = Hd_val(v);
      claim(s, v, s->q[i].parent, root);
    }
    if (Has_status_hd(hd, NOT_MARKABLE)) continue;
    s->reachable++;
    caml_memprof_points_live(hd);
    tag_t tag = Tag_hd(hd);
    if (tag >= No_scan_tag) continue;
    if (tag == Cont_tag) {
      struct stack_info *stk = Ptr_val(Field(v, 0));
      if (stk != NULL) {
        s->cur_parent = (uint32_t)i;
        s->cur_root = root;
        caml_scan_stack(visit_action, 0, s, stk, 0);
      }
      continue;
    }
    value *p = Op_val(v), *end = p + Wosize_hd(hd);
    if (tag == Closure_tag) p += Start_env_closinfo(Closinfo_val(v));
    for (; p < end; p++) {
      value f = *p;
      if (Is_block(f) && !Is_young(f)
          && caml_memprof_first_visit(&s->vis, (uintnat)Hp_val(f))) {
        enter(s, f, (uint32_t)i, root);
      }
    }
  }
  if (s->vis.failed) {
    s->failed = true;
    s->not_taken = "out of memory";
  }
}

static struct caml_memprof_snapshot not_possible = {
  .not_taken = "another domain is running, or an ephemeron was created"
};
static struct caml_memprof_snapshot no_memory = {
  .not_taken = "out of memory"
};
static struct caml_memprof_snapshot live_by_gc = {
  .not_taken = "live=gc: major cycles judge liveness, no walk"
};
static struct caml_memprof_snapshot live_off = {
  .not_taken = "live=off: no walk at exit"
};

static void free_tables(struct caml_memprof_snapshot *s)
{
  free(s->q);
  free(s->roots);
  free(s->tab);
  free(s->targets);
  free(s->filter);
  s->filter = NULL;
  s->q = NULL;
  s->roots = NULL;
  s->tab = NULL;
  s->targets = NULL;
}

struct caml_memprof_snapshot *caml_memprof_snapshot_judge(bool *judged)
{
  *judged = false;
  if (caml_memprof_env()->live == CAML_MEMPROF_LIVE_GC) return &live_by_gc;
  if (caml_memprof_env()->live == CAML_MEMPROF_LIVE_OFF) return &live_off;
  if (!caml_domain_alone()
      || atomic_load_relaxed(&caml_memprof_ephemerons_created)) {
    return &not_possible;
  }
  struct caml_memprof_snapshot *s = calloc(1, sizeof *s);
  if (s == NULL) return &no_memory;
  s->limit = caml_memprof_env()->snapshot_mem;
  caml_empty_minor_heaps_once();
  caml_memprof_points_live_begin();
  caml_memprof_each_major(add_tracked, s);
  if (!s->failed) filter_build(s);
  if (!s->failed) scan_roots(s);
  if (!s->failed) drain(s);
  if (!s->failed) {
    caml_memprof_judge_major(caml_memprof_visited_has, &s->vis);
    *judged = true;
  }
  caml_memprof_visited_clear(&s->vis);
  if (s->failed) {
    free_tables(s);
    s->ntargets = 0;
  }
  return s;
}

void caml_memprof_snapshot_free(struct caml_memprof_snapshot *s)
{
  if (s == NULL || s == &not_possible || s == &no_memory
      || s == &live_by_gc || s == &live_off) {
    return;
  }
  free_tables(s);
  free(s);
}

/**** Rendering ****/

/* A stack of the profile by its tracker record (its counters), and
 * the index of the line it is merged into. */
struct stack_ref { const atomic_uintnat *count; size_t line, sorted; };

static int by_count(const void *a, const void *b)
{
  uintptr_t x = (uintptr_t)((const struct stack_ref *)a)->count;
  uintptr_t y = (uintptr_t)((const struct stack_ref *)b)->count;
  return x < y ? -1 : x > y;
}

/* One site (a line of the profile's stacks) and its reachable blocks. */
struct group {
  size_t line, sorted;                  /* its first sorted stack */
  size_t first;                         /* target met first */
  uintnat blocks, samples, words, shared_samples, shared_words;
};

static int by_weight(const void *a, const void *b)
{
  const struct group *x = a, *y = b;
  if (x->samples != y->samples) return x->samples > y->samples ? -1 : 1;
  return x->line < y->line ? -1 : x->line > y->line;
}

/* A reachable tracked block (its index among the targets) and the
 * line of its site. */
struct line_target { size_t line, k; };

static int by_line_target(const void *a, const void *b)
{
  const struct line_target *x = a, *y = b;
  if (x->line != y->line) return x->line < y->line ? -1 : 1;
  return x->k < y->k ? -1 : x->k > y->k;
}

struct render_state {
  struct caml_memprof_snapshot *s;
  const struct caml_memprof_sorted *so;
  struct stack_ref *refs;               /* sorted by count */
  size_t nrefs;
};

static const struct stack_ref *ref_of(const struct render_state *r,
                                      const atomic_uintnat *count)
{
  struct stack_ref key = { count, 0, 0 };
  return bsearch(&key, r->refs, r->nrefs, sizeof key, by_count);
}

static void add_frames(struct caml_memprof_buf *b, const struct render_state *r,
                       size_t sorted)
{
  const uint32_t *ranks;
  size_t n;
  caml_memprof_sorted_stack(r->so, sorted, &ranks, &n);
  caml_memprof_buf_lit(b, "\"frames\":[");
  for (size_t i = 0; i < n; i++) {
    if (i) caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_uint(b, ranks[i]);
  }
  caml_memprof_buf_lit(b, "]");
}

static void add_root(struct caml_memprof_buf *b, const struct rootrec *rr)
{
  switch (rr->kind) {
  case ROOT_GLOBAL: {
#ifdef NATIVE_CODE
    const value *at = rr->where;
    for (int i = 0; caml_globals[i] != 0; i++) {
      for (value *glob = caml_globals[i]; *glob != 0; glob++) {
        const value *f0 = (const value *)&Field(*glob, 0);
        if (at < f0 || at >= f0 + Wosize_val(*glob)) continue;
        caml_memprof_buf_lit(b, "{\"kind\":\"global\",\"unit\":");
        const char *unit = NULL;
        char name[256];
#ifndef _WIN32
        Dl_info info;
        if (dladdr(caml_globals[i], &info) && info.dli_sname != NULL
            && strncmp(info.dli_sname, "caml", 4) == 0) {
          const char *u = info.dli_sname + 4;
          size_t len = strlen(u);
          static const char suffix[] = "gc_roots";  /* after . or __ */
          size_t sl = sizeof suffix - 1;
          if (len > sl + 1 && strcmp(u + len - sl, suffix) == 0) {
            len -= sl;
            if (u[len - 1] == '.') len--;
            else if (len > 2 && u[len - 1] == '_' && u[len - 2] == '_') len -= 2;
          }
          if (len < sizeof name) {
            memcpy(name, u, len);
            name[len] = '\0';
            unit = name;
          }
        }
#endif
        caml_memprof_buf_json_string(b, unit);
        caml_memprof_buf_printf(b, ",\"field\":%lu}",
                                (unsigned long)(at - f0));
        return;
      }
    }
#else
    if (rr->where == (const void *)&caml_global_data) {
      caml_memprof_buf_lit(b, "{\"kind\":\"global_data\"}");
      return;
    }
#endif
    caml_memprof_buf_lit(b, "{\"kind\":\"c_global\"}");
    return;
  }
  case ROOT_STACK: {
#ifdef NATIVE_CODE
    /* The frame's own function is the outermost of its inlined chain;
     * its location, the innermost: where it stopped. */
    debuginfo d = caml_debuginfo_extract((backtrace_slot)rr->where);
    struct caml_loc_info inner, outer;
    memset(&inner, 0, sizeof inner);
    memset(&outer, 0, sizeof outer);
    for (bool first = true; d != NULL; d = caml_debuginfo_next(d)) {
      struct caml_loc_info li;
      memset(&li, 0, sizeof li);
      caml_debuginfo_location(d, &li);
      if (!li.loc_valid) continue;
      if (first) inner = li;
      outer = li;
      first = false;
    }
    caml_memprof_buf_lit(b, "{\"kind\":\"stack\",\"function\":");
    caml_memprof_buf_json_string(b, inner.loc_valid ? outer.loc_defname : NULL);
    caml_memprof_buf_lit(b, ",\"file\":");
    caml_memprof_buf_json_string(b, inner.loc_valid ? inner.loc_filename : NULL);
    if (inner.loc_valid) {
      caml_memprof_buf_printf(b, ",\"line\":%d}", inner.loc_start_lnum);
    } else {
      caml_memprof_buf_lit(b, ",\"line\":null}");
    }
#else
    caml_memprof_buf_lit(b, "{\"kind\":\"other\"}");
#endif
    return;
  }
  case ROOT_C_LOCAL:
    caml_memprof_buf_lit(b, "{\"kind\":\"c_local\"}");
    return;
  case ROOT_FINALISER:
    caml_memprof_buf_lit(b, "{\"kind\":\"finaliser\"}");
    return;
  case ROOT_FINALISED:
    caml_memprof_buf_lit(b, "{\"kind\":\"finalised_value\"}");
    return;
  default:
    caml_memprof_buf_lit(b, "{\"kind\":\"other\"}");
    return;
  }
}

/* The field of `from` through which `to` was reached, or -1 (through a
 * continuation's stack). */
static intnat field_to(value from, value to)
{
  if (Tag_val(from) == Cont_tag) return -1;
  uintnat i = 0;                        /* a closure's code pointers: */
  if (Tag_val(from) == Closure_tag) {   /* not followed by the walk */
    i = Start_env_closinfo(Closinfo_val(from));
  }
  for (; i < Wosize_val(from); i++) {
    value f = Field(from, i);
    if (!Is_block(f)) continue;
    if (Tag_val(f) == Infix_tag) f -= Infix_offset_val(f);
    if (f == to) return (intnat)i;
  }
  return -1;
}

/* One hop: block `v`, its site if it is tracked, and the field leading
 * to `next` (0 for the last hop). */
static void add_hop(struct caml_memprof_buf *b, const struct render_state *r,
                    value v, value next)
{
  caml_memprof_buf_printf(b, "{\"tag\":%u,\"size\":%lu", Tag_val(v),
                          (unsigned long)Wosize_val(v));
  if (next != 0) {
    intnat f = field_to(v, next);
    if (f >= 0) caml_memprof_buf_printf(b, ",\"field\":%ld", (long)f);
    else caml_memprof_buf_lit(b, ",\"field\":null");
  }
  struct tracked *t = tracked_find(r->s, v);
  const struct stack_ref *ref = t != NULL ? ref_of(r, t->site) : NULL;
  if (ref != NULL) {
    caml_memprof_buf_lit(b, ",");
    add_frames(b, r, ref->sorted);
  }
  caml_memprof_buf_lit(b, "}");
}

/* The paths of the sites shown, read back through the queue's parents
 * together: a long path's entries lie far apart in the queue, and the
 * paths of several sites often share their part near the root (one
 * long list holding them all). Parents come before their children in
 * the queue, so the chains are followed from the highest entry down,
 * and two chains reaching the same entry meet there: each entry is read
 * once. `chain[c]` gets the entries from the root to target `first[c]`'s
 * parent (`len[c]` of them); false when out of memory. */
static bool read_paths(struct caml_memprof_snapshot *s,
                       const size_t *first, size_t n, uint32_t **chain,
                       size_t *len)
{
  struct up {
    uint32_t *e;                        /* from the parent upwards */
    size_t n, cap;
    uint32_t head;                      /* next entry to read, or NONE */
    size_t into, at;                    /* met chain `into` at its e[at] */
  } *u = calloc(n ? n : 1, sizeof *u);
  if (u == NULL) return false;
  bool ok = true;
  for (size_t c = 0; c < n; c++) {
    u[c].head = s->targets[first[c]].parent;
    u[c].into = SIZE_MAX;
  }
  while (ok) {
    size_t c = SIZE_MAX;                /* the chain at the highest entry */
    for (size_t d = 0; d < n; d++) {
      if (u[d].head != NONE && (c == SIZE_MAX || u[d].head > u[c].head)) c = d;
    }
    if (c == SIZE_MAX) break;
    uint32_t h = u[c].head;
    if (u[c].n == u[c].cap) {
      size_t cap = u[c].cap ? 2 * u[c].cap : 64;
      uint32_t *e = realloc(u[c].e, cap * sizeof *e);
      if (e == NULL) { ok = false; break; }
      u[c].e = e;
      u[c].cap = cap;
    }
    u[c].e[u[c].n++] = h;
    u[c].head = s->q[h].parent;
    for (size_t d = 0; d < n; d++) {
      if (d != c && u[d].head == h) {
        u[d].head = NONE;
        u[d].into = c;
        u[d].at = u[c].n - 1;
      }
    }
  }
  for (size_t c = 0; ok && c < n; c++) {
    size_t total = 0;
    for (size_t d = c, at = 0; d != SIZE_MAX; at = u[d].at, d = u[d].into) {
      total += u[d].n - at;
    }
    chain[c] = malloc((total ? total : 1) * sizeof **chain);
    if (chain[c] == NULL) { ok = false; break; }
    len[c] = total;
    size_t k = total;                   /* filled from the target up */
    for (size_t d = c, at = 0; d != SIZE_MAX; at = u[d].at, d = u[d].into) {
      for (size_t j = at; j < u[d].n; j++) chain[c][--k] = u[d].e[j];
    }
  }
  size_t bytes = n * sizeof *u;
  for (size_t c = 0; c < n; c++) {
    bytes += (u[c].cap + (ok ? len[c] : 0)) * sizeof(uint32_t);
    free(u[c].e);
  }
  account(s, 0, bytes);
  free(u);
  return ok;
}

static void add_path(struct caml_memprof_buf *b, const struct render_state *r,
                     const struct target *t, const uint32_t *chain, size_t n)
{
  struct caml_memprof_snapshot *s = r->s;
  size_t hops = n + 1;                  /* the target is the last */
  caml_memprof_buf_lit(b, ",\"root\":");
  add_root(b, &s->roots[t->root]);
  caml_memprof_buf_printf(b, ",\"depth\":%lu,\"path\":[",
                          (unsigned long)hops);
  for (size_t h = 0; h < hops; h++) {
    if (hops > PATH_HEAD + PATH_TAIL && h == PATH_HEAD) {
      caml_memprof_buf_printf(b, ",{\"elided\":%lu}",
                              (unsigned long)(hops - PATH_HEAD - PATH_TAIL));
      h = hops - PATH_TAIL;
    }
    value v = h < n ? s->q[chain[h]].v : t->block;
    value next = h + 1 < n ? s->q[chain[h + 1]].v
      : h + 1 == n ? t->block : 0;
    if (h) caml_memprof_buf_lit(b, ",");
    add_hop(b, r, v, next);
  }
  caml_memprof_buf_lit(b, "]");
}

static const char *taken_at = "exit";

void caml_memprof_snapshot_taken_at(const char *at)
{
  taken_at = at;
}

bool caml_memprof_snapshot_render(struct caml_memprof_buf *b,
                                  struct caml_memprof_snapshot *s,
                                  const struct caml_memprof_sorted *so)
{
  caml_memprof_buf_lit(b, ",\n\"snapshot\":{\"at\":");
  caml_memprof_buf_json_string(b, taken_at);
  if (s->not_taken != NULL) {
    caml_memprof_buf_lit(b, ",\"taken\":false,\"reason\":");
    caml_memprof_buf_json_string(b, s->not_taken);
    caml_memprof_buf_lit(b, "}");
    return true;
  }
  struct render_state r = { s, so, NULL, caml_memprof_sorted_size(so) };
  size_t ng = 0;
  struct line_target *order = NULL;
  struct group *g = NULL;
  r.refs = malloc((r.nrefs ? r.nrefs : 1) * sizeof *r.refs);
  order = malloc((s->ntargets ? s->ntargets : 1) * sizeof *order);
  g = malloc((s->ntargets ? s->ntargets : 1) * sizeof *g);
  bool ok = r.refs != NULL && order != NULL && g != NULL;
  if (ok) {
    account(s, 0, r.nrefs * sizeof *r.refs
            + s->ntargets * (sizeof *order + sizeof *g));
    size_t line = 0;
    for (size_t i = 0; i < r.nrefs; i++) {
      if (i > 0 && !caml_memprof_sorted_same(so, i - 1, i)) line++;
      r.refs[i] = (struct stack_ref){ caml_memprof_sorted_stack(so, i, NULL,
                                                                 NULL),
                                      line, i };
    }
    /* Each line is named by its first sorted stack. */
    for (size_t i = 1; i < r.nrefs; i++) {
      if (r.refs[i].line == r.refs[i - 1].line) {
        r.refs[i].sorted = r.refs[i - 1].sorted;
      }
    }
    qsort(r.refs, r.nrefs, sizeof *r.refs, by_count);
    /* The targets by line, in the walk's order within a line. */
    size_t m = 0;
    for (size_t k = 0; k < s->ntargets; k++) {
      const struct stack_ref *ref = ref_of(&r, s->targets[k].site);
      if (ref != NULL) order[m++] = (struct line_target){ ref->line, k };
    }
    qsort(order, m, sizeof *order, by_line_target);
    for (size_t i = 0; i < m; ng++) {
      const struct stack_ref *ref = ref_of(&r, s->targets[order[i].k].site);
      struct group *x = &g[ng];
      *x = (struct group){ order[i].line, ref->sorted, order[i].k,
                           0, 0, 0, 0, 0 };
      uint32_t root = s->targets[x->first].root;
      for (; i < m && order[i].line == x->line; i++) {
        const struct target *t = &s->targets[order[i].k];
        uintnat words = Whsize_val(t->block);
        x->blocks++;
        x->samples += t->samples;
        x->words += words;
        if (t->root == root) {
          x->shared_samples += t->samples;
          x->shared_words += words;
        }
      }
    }
    qsort(g, ng, sizeof *g, by_weight);
  }
  caml_memprof_buf_printf(b, ",\"taken\":true,\"walk\":\"breadth-first\","
                          "\"sites_limit\":%d", caml_memprof_env()->snapshot_sites);
  caml_memprof_buf_field(b, false, "reachable_blocks", s->reachable);
  caml_memprof_buf_field(b, false, "tracked_blocks", s->tcount);
  caml_memprof_buf_field(b, false, "tracked_reachable", s->ntargets);
  caml_memprof_buf_field(b, false, "table_bytes", s->peak_bytes);
  caml_memprof_buf_lit(b, ",\"sites\":[");
  size_t limit = (size_t)caml_memprof_env()->snapshot_sites;
  size_t shown = ng < limit ? ng : limit;
  size_t *first = malloc((shown ? shown : 1) * sizeof *first);
  uint32_t **chain = calloc(shown ? shown : 1, sizeof *chain);
  size_t *len = malloc((shown ? shown : 1) * sizeof *len);
  ok = ok && first != NULL && chain != NULL && len != NULL;
  for (size_t i = 0; ok && i < shown; i++) first[i] = g[i].first;
  ok = ok && read_paths(s, first, shown, chain, len);
  for (size_t i = 0; ok && i < shown; i++) {
    const struct group *x = &g[i];
    if (i) caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_lit(b, "\n{");
    add_frames(b, &r, x->sorted);
    caml_memprof_buf_field(b, false, "live_blocks", x->blocks);
    caml_memprof_buf_field(b, false, "live_samples", x->samples);
    caml_memprof_buf_field(b, false, "live_words", x->words);
    caml_memprof_buf_field(b, false, "shared_samples", x->shared_samples);
    caml_memprof_buf_field(b, false, "shared_words", x->shared_words);
    add_path(b, &r, &s->targets[x->first], chain[i], len[i]);
    caml_memprof_buf_lit(b, "}");
  }
  caml_memprof_buf_lit(b, "]}");
  for (size_t i = 0; chain != NULL && i < shown; i++) free(chain[i]);
  free(chain);
  free(first);
  free(len);
  free(r.refs);
  free(order);
  free(g);
  return ok;
}
