/* memprof-ci: the built-in C tracker of statmemprof.
 *
 * 1. With OCAMLMEMPROF=rate=... the runtime calls
 *    caml_memprof_tracker_start() just before the program's first
 *    module initialiser. It starts a memprof profile whose callbacks
 *    are the C functions below (memprof.c, design 8.3), so no OCaml
 *    code runs and nothing is allocated on the OCaml heap per sample.
 *    New domains and threads inherit the profile. Profiles the program
 *    starts itself with Gc.Memprof run beside it, each with its own
 *    sampler (memprof.c, design 8.11). The profile is written by
 *    caml_memprof_tracker_finish: from caml_do_exit (sys.c) when the
 *    program exits, or from caml_shutdown (startup_aux.c) when a C
 *    program that embeds OCaml shuts the runtime down, before the heap
 *    is freed; whichever comes first, once.
 * 2. Sites: one record per distinct raw callstack prefix (at most
 *    `frames` slots), found through an open-addressing hash table that
 *    readers probe without a lock (each thread first tries the site
 *    it hit last); only inserting a new stack takes the mutex. Samples
 *    arrive in batches (memprof.c, design 8.10), whose lookups are
 *    overlapped (on_alloc_batch), except with a trace (design 6). Records
 *    are cut, under that mutex, from 64 KiB chunks in creation order
 *    and never freed or moved, so the Val_ptr(site) that memprof keeps
 *    for each sampled block stays valid until exit, a new stack costs
 *    no malloc, and the exit reads the records in address order
 *    rather than in hash order (a program with a stack per sample has
 *    megabytes of them, mostly out of cache by then).
 * 3. Counters are relaxed atomics: `alloc` runs on any domain, and
 *    `promote`/`dealloc` run inside collections, on every domain in
 *    parallel. Counts are exact sums; nothing is scaled. A domain that
 *    runs alone stays alone while it is inside a callback (another
 *    domain is spawned only by a running one, and the spawner waits,
 *    holding its domain, until the child counts as running), so a
 *    callback that finds it alone updates counters with plain loads
 *    and stores and inserts a new site without the mutex: the usual
 *    case, and a lock-prefixed instruction or a cold mutex costs more
 *    than the rest of a sample.
 * 4. At exit (caml_memprof_tracker_finish, at most once): stop
 *    sampling and freeze the peak (design 5); read the GC counters;
 *    have the blocks no longer reachable counted as collected (a walk
 *    of the heap, memprof_reach.c, or else two major cycles) while, in
 *    native code, another thread resolves the stacks as it reads their
 *    records, and sorts them (memprof_profile.h: sorting reads no
 *    counter); then, in
 *    one pass over the records, settle the peak and sum the counts, and
 *    write the profile where `out` says (memprof_outfile.c), rendered
 *    by memprof_profile.c from the sorted stacks and the records' final
 *    counters (runtime-patch/format/profile-format.md). The program's
 *    exit status is kept, except that a profile that cannot be written
 *    turns 0 into 2.
 * 5. Peak: the moment of the run when the most samples were live
 *    (allocated and not yet reported dead, over all sites), in the
 *    order the callbacks ran; the first such moment on a tie. Only an
 *    allocation can make a new peak, so `on_alloc` compares the live
 *    total with the highest so far. A copy of every site's live count
 *    at each new peak would cost a pass over the sites, and a growing
 *    heap makes a new peak at nearly every sample; instead a new peak
 *    only starts a new epoch, and a site records its live count (in
 *    COUNT_PEAK_LIVE, stamped with the epoch) just before the first
 *    change to it in an epoch: a site whose stamp is not the last
 *    epoch has not changed since the peak. The finish freezes the
 *    peak before the exit judgment (peak_freeze: no later allocation,
 *    another domain's last sample say, can make a new one; a death in
 *    the judgment stamps its site like any death) and settles the
 *    unstamped sites after it (settle_and_sum), so the cost is O(1) per
 *    sample and per death and one pass at exit. The live counts,
 *    the total and the stamps move together: under `peak_lock` when
 *    several domains run (design 3), so the peak is one moment of a
 *    single order of all domains' events; plainly when the domain is
 *    alone. The trace (design 6) writes its alloc and collect events
 *    from the same callbacks, so for a single domain memtrace's tools
 *    find the same peak in it (format document, "The peak").
 * 6. With trace= (memprof_ctf.c), each sampled block also goes into
 *    the memtrace trace: memprof then keeps the trace's record of the
 *    block (its site and object id) instead of the site itself; the
 *    profile is the same. The trace is finished after the judgment of
 *    design 4, before the profile is written (none without out=).
 * 7. This file holds the sample path (sites, callbacks) and the
 *    sequence of start and finish; it relies on memprof_env.c (the
 *    setting), memprof_reach.c, memprof_profile.c and
 *    memprof_outfile.c. The exit runs on the exiting thread, and on
 *    the threads of design 4 and memprof_profile.c.
 * 8. With stacks=site, each sample's callstack keeps only the slots
 *    the harness's site grouping (harness/memprof_ci/sites.py: every
 *    grouping, with a site's lines and `via`) reads, before the site
 *    is looked up. Each slot gets a verdict from the frames it resolves
 *    to (memprof_frames.c, design 4): unknown (no frame with a name or
 *    a file), standard library, or outside it, decided exactly as the
 *    harness's is_stdlib does: a frame is outside when it has a
 *    function name or a file and its function name (if not empty)
 *    does not start with Stdlib, Camlinternal or Std_exit, or, without
 *    one, its file's base name is not stdlib.ml or std_exit.ml and
 *    does not start with camlinternal. Kept, innermost first: the
 *    innermost slot that is not unknown (the "innermost" grouping's
 *    frame), the site slot (the innermost one outside the standard
 *    library) and, between them, the last standard-library slot
 *    before it (where the harness finds `via`); the callers of the
 *    site slot and the slots in between are dropped. A stack without
 *    a site slot keeps its innermost known slot only, one without a
 *    known slot its innermost slot. So a stack has at most 3 slots,
 *    the distinct stacks of a program are bounded by its code (not by
 *    its recursion), and the site table is the one whole stacks of the
 *    same `frames` give (the slots are chosen among the same first
 *    `frames`). Flame graphs of such a profile show those three frames
 *    only. The verdict of a slot depends on its debug information
 *    only, so it is decided once per slot and kept in a fixed table of
 *    single words (slot << 2 | verdict) that any domain reads and
 *    fills without a lock (a compare-and-swap into an empty entry; a
 *    racing duplicate writes the same verdict); a slot that finds no
 *    room within a few probes is decided again each time. In bytecode
 *    the debug information is read when the tracker starts, as for a
 *    trace (memprof_ctf.c, design 2), so that no sample has to read
 *    it. A trace gets the same kept slots. In native code the stack
 *    walk itself (caml_collect_frame_descrs, frame_descriptors.c)
 *    stops at the first site slot after the innermost one, so a
 *    sample costs a walk to its site rather than `frames` frames.
 *    The innermost slot is never a reason to stop: the walk sees its
 *    frame descriptor, while the stack keeps the debug information of
 *    the allocation itself, whose verdict may differ; whatever it is,
 *    the slots chosen lie within the shorter walk.
 * 9. The stack budget (stackmem=, 256 KiB by default; native code
 *    without stacks=site). A program whose samples nearly all have
 *    stacks of their own (deep recursion, 16 frames) would otherwise
 *    keep a record per sample, and the exit's resolution, sorting and
 *    rendering as much again per stack. So records of whole stacks are
 *    kept until they take `stackmem` bytes; past that, a stack not
 *    yet seen is cut as design 8 cuts it, and counted at the record of
 *    its kept slots, which says so (`cut`, set once, never cleared).
 *    The number of cut records is bounded by the program's code, not
 *    by its samples, so the tracker's memory is the budget plus that.
 *    Stacks seen before the budget ran out keep counting whole. The
 *    site tables the harness builds are unchanged by a cut (design 8:
 *    the kept slots are those its groupings read); the profile marks
 *    every line that holds a cut stack, and its config records the
 *    budget. The verdicts come from the same lock-free table as in
 *    design 8, smaller here. Bytecode keeps whole stacks: a verdict
 *    there needs the debug information read at start, which allocates
 *    on the OCaml heap (design 8 does that only when asked).
 * 10. Snapshots on demand (snapshot=signal, snapshot=call). A snapshot
 *    taken while the program runs is the exit's profile, with its
 *    snapshot section, of a copy of the process: at a safe point the
 *    tracker forks, the child runs the finish of design 4 as at exit
 *    (its `at` is "signal" or "call" instead of "exit"), writes it to
 *    `snapshot_out` (its %n the snapshot's number, %p the program's
 *    pid) and leaves with _exit, and the program waits for it. So
 *    "live at exit" in that file means live at the snapshot, judged by
 *    the exit's walk of reachability, and nothing of the program
 *    changes: no collection is run or moved in it (the child empties
 *    its own copy of the minor heap), no sampling state or counter is
 *    touched, and the trace, which the child does not write
 *    (memprof_ctf.c, design 6), goes on. The child keeps every thread's
 *    saved stack as a root; it runs no OCaml code and no at_exit. A
 *    SIGUSR1 handler (installed at start only with `signal`; a program
 *    that sets its own takes the signal back) sets a flag and
 *    interrupts the domains; memprof.c's pending-action callback calls
 *    caml_memprof_tracker_snapshot_requested, which takes it. The
 *    program's call is the primitive caml_memprof_ci_snapshot (declared
 *    `external snapshot : unit -> string = "caml_memprof_ci_snapshot"`),
 *    which returns the path written, or "": silently when the tracker
 *    does not run (an unprofiled program), else with one line on
 *    stderr when `call` was not asked for, another domain runs (a fork
 *    would copy it half-way) or the child failed. Memory: the child's,
 *    released when it ends.
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#endif
#include "caml/alloc.h"
#include "caml/backtrace_prim.h"
#include "caml/camlatomic.h"
#include "caml/domain.h"
#include "caml/frame_descriptors.h"
#include "caml/globroots.h"
#include "caml/major_gc.h"
#include "caml/memory.h"
#include "caml/memprof.h"
#include "caml/memprof_budgets.h"
#include "caml/memprof_ctf.h"
#include "caml/memprof_env.h"
#include "caml/memprof_outfile.h"
#include "caml/memprof_points.h"
#include "caml/memprof_profile.h"
#include "caml/memprof_reach.h"
#include "caml/memprof_snapshot.h"
#include "caml/memprof_tracker.h"
#include "caml/minor_gc.h"
#include "caml/mlvalues.h"
#include "caml/platform.h"
#include "caml/runtime_events.h"
#ifndef NATIVE_CODE
#include "caml/fix_code.h"
#endif

CAMLextern value caml_sys_argv(value unit);

#define N_COUNTS CAML_MEMPROF_N_COUNTS

/**** Sites ****/

struct site {
  atomic_uintnat count[N_COUNTS];   /* COUNT_SAMPLES stays 0 (derived) */
  uintnat peak_stamp;               /* design 5, moved with the counts */
  uint64_t hash;
  uint32_t nslots;
  _Atomic(uint32_t) cut;            /* design 9: 1 once a stack cut to
                                       these slots was counted here */
  backtrace_slot slots[];
};

/* The table: open addressing over a power-of-2 capacity, at most half
 * full, of 64-bit entries: 0 for an empty slot, else the site's record
 * address below eight bits of its hash (the tag). A probe reads entries
 * and enters a record only when a tag matches, so an existing stack
 * costs the table line and its record, and a new stack, which most
 * samples of a program with a stack per sample are, writes its entry
 * into the line the probe has just read. Records and tables lie below
 * 2^56 (checked where they are mapped; the system's user address space
 * is smaller). The batch path (on_alloc_batch) asks for the lines of
 * several samples before it reads any.
 *
 * Readers probe without the lock: an entry is published (release) only
 * after its record is written, and once set never changes; a grown
 * table is published (release) only once it holds every site. A table
 * replaced by a larger one stays allocated, since a reader may still
 * be probing it; a miss there only sends that reader to the locked
 * path. */
#define TAG_SHIFT 56
#define PTR_MASK (((uint64_t)1 << TAG_SHIFT) - 1)

struct site_table {
  struct site_table *retired;        /* the smaller table it replaced,
                                        kept reachable for leak checkers */
  size_t capacity;                   /* 2^shift */
  unsigned shift;
  _Atomic(uint64_t) entry[];
};

Caml_inline uint64_t entry_of(uint64_t h, const struct site *s)
{
  return (h >> TAG_SHIFT) << TAG_SHIFT | (uint64_t)(uintptr_t)s;
}

Caml_inline struct site *entry_site(uint64_t e)
{
  return (struct site *)(uintptr_t)(e & PTR_MASK);
}

static caml_plat_mutex sites_lock = CAML_PLAT_MUTEX_INITIALIZER;
/* The current table and its capacity in one word (its log2 in the top
 * eight bits, above the table's address), so that a probe's first
 * load gives both instead of waiting for the table's header line. */
static _Atomic(uint64_t) sites = 0;

Caml_inline struct site_table *table_of(uint64_t w)
{
  return (struct site_table *)(uintptr_t)(w & PTR_MASK);
}

Caml_inline size_t mask_of(uint64_t w)
{
  return ((size_t)1 << (w >> TAG_SHIFT)) - 1;
}
static size_t sites_count = 0;       /* under sites_lock */
static size_t slots_count = 0;       /* of all sites; under sites_lock */

/* Every site's hash and record in creation order (under sites_lock): a
 * grown table is filled from this compact list instead of from the
 * records, which lie in cold memory ten times as large. */
struct site_ref { uint64_t hash; struct site *site; };
static struct site_ref *site_refs = NULL;
static size_t site_refs_capacity = 0;

/* The chunks site records are cut from (design 2), oldest first; all
 * under sites_lock. A record never spans two chunks; one larger than a
 * chunk's room gets a chunk of its own. Chunks double in size from 64
 * KiB to 256 KiB and, where the system can, come with their pages
 * already mapped (MAP_POPULATE): a program with a stack per sample
 * writes a new record at nearly every sample, and taking a page fault
 * every 17 records cost more than mapping the pages in one call. A
 * program with few stacks keeps one 64 KiB chunk. */
#define CHUNK_MIN ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)256 << 10)
#define SCAN_AHEAD 1024                 /* bytes */
struct chunk {
  struct chunk *next;
  size_t used, size;                  /* bytes of data */
  uint64_t data[];                    /* records are word-aligned */
};
static struct chunk *chunks_first = NULL, *chunks_last = NULL;
static size_t chunk_next = CHUNK_MIN;

Caml_inline size_t site_bytes(size_t nslots)
{
  return sizeof(struct site) + nslots * sizeof(backtrace_slot);
}

/* `bytes` of zeroed memory that is never freed; NULL if none. */
static void *chunk_memory(size_t bytes)
{
#ifdef MAP_POPULATE
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  if ((uint64_t)(uintptr_t)m + bytes - 1 > PTR_MASK) {
    munmap(m, bytes);
    return NULL;
  }
  return m;
#else
  void *m = calloc(1, bytes);
  if (m != NULL && (uint64_t)(uintptr_t)m + bytes - 1 > PTR_MASK) {
    free(m);
    return NULL;
  }
  return m;
#endif
}

/* Room for a site of `nslots` slots; NULL if out of memory. */
static struct site *site_room(size_t nslots)
{
  size_t need = site_bytes(nslots);
  struct chunk *c = chunks_last;
  if (c == NULL || c->size - c->used < need) {
    size_t bytes = sizeof *c + need;
    if (bytes < chunk_next) bytes = chunk_next;
    c = chunk_memory(bytes);
    if (c == NULL) return NULL;
    if (chunk_next < CHUNK_MAX) chunk_next *= 2;
    c->next = NULL;
    c->used = 0;
    c->size = bytes - sizeof *c;
    if (chunks_last != NULL) chunks_last->next = c; else chunks_first = c;
    chunks_last = c;
  }
  struct site *s = (struct site *)((char *)c->data + c->used);
  c->used += need;
  return s;
}

/* The record at `*at` in `c`, with `*at` moved past it (under
 * sites_lock). The exit's passes read every record in address order,
 * long out of cache: the lines a few records ahead are asked for. */
Caml_inline struct site *next_record(const struct chunk *c, size_t *at)
{
  struct site *s = (struct site *)((char *)c->data + *at);
  for (int k = 0; k < 4; k++) {
    caml_prefetch((char *)s + SCAN_AHEAD + 64 * k);
  }
  *at += site_bytes(s->nslots);
  return s;
}

/* A multiply per slot, and one fold at the end: the table indexes by
 * the low bits, which the multiplications alone fill only from the
 * slots' low bits. */
static uint64_t hash_slots(const backtrace_slot *slots, size_t n)
{
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  for (size_t i = 0; i < n; i++) {
    h = (h ^ (uint64_t)(uintptr_t)slots[i]) * 0xBF58476D1CE4E5B9ull;
  }
  return h ^ (h >> 31);
}

/* Stacks are short (at most `frames` slots): a word loop beats a call
 * to memcmp here. */
Caml_inline bool same_slots(const backtrace_slot *a, const backtrace_slot *b,
                            size_t n)
{
  for (size_t i = 0; i < n; i++) if (a[i] != b[i]) return false;
  return true;
}

/* The site for this stack in `t`, or NULL; `*hole` receives the index
 * of the empty slot that ended the probe. */
static struct site *sites_probe(uint64_t w, uint64_t h,
                                const backtrace_slot *slots, size_t n,
                                size_t *hole)
{
  struct site_table *t = table_of(w);
  size_t mask = mask_of(w);
  uint64_t tag = h >> TAG_SHIFT;
  for (size_t j = h & mask;; j = (j + 1) & mask) {
    uint64_t e = atomic_load_explicit(&t->entry[j], memory_order_acquire);
    if (e == 0) { *hole = j; return NULL; }
    if (e >> TAG_SHIFT != tag) continue;
    struct site *s = entry_site(e);
    if (s->hash == h && s->nslots == n && same_slots(s->slots, slots, n)) {
      return s;
    }
  }
}

/* A table twice as large as `old` (1024 slots at first) holding every
 * site; NULL if out of memory. Under sites_lock. */
static struct site_table *sites_grown(struct site_table *old)
{
  size_t cap = old ? 2 * old->capacity : 1024;
  struct site_table *t = calloc(1, sizeof *t + cap * sizeof t->entry[0]);
  if (t == NULL) return NULL;
  if ((uint64_t)(uintptr_t)t > PTR_MASK) { free(t); return NULL; }
  t->retired = old;
  t->capacity = cap;
  t->shift = old ? old->shift + 1 : 10;
  for (size_t i = 0; i < sites_count; i++) {
    uint64_t h = site_refs[i].hash;
    size_t j = h & (cap - 1);
    while (atomic_load_relaxed(&t->entry[j]) != 0) j = (j + 1) & (cap - 1);
    atomic_store_relaxed(&t->entry[j], entry_of(h, site_refs[i].site));
  }
  return t;
}

/* Design 9: whole stacks are kept while their records take at most
 * `stackmem` bytes (whole_bytes, written under sites_lock); past that a
 * new stack is cut to its site's slots. */
static bool cut_past_budget = false;       /* set once at start */
static uint64_t stackmem = 0;
static _Atomic(uint64_t) whole_bytes = 0;
#define KEPT_MAX 3
static size_t keep_site_slots(const backtrace_slot *callstack, size_t n,
                              backtrace_slot kept[KEPT_MAX]);

Caml_inline void mark_cut(struct site *s, bool cut)
{
  if (cut && atomic_load_relaxed(&s->cut) == 0) atomic_store_relaxed(&s->cut, 1);
}

/* The record for this callstack, created if new; NULL if out of
 * memory (the sample is then not recorded).
 * `alone`: design 3. */
static struct site *site_of(const backtrace_slot *slots, size_t n,
                            uint64_t h, bool alone)
{
  size_t hole;
  uint64_t w = atomic_load_explicit(&sites, memory_order_acquire);
  struct site *found = w ? sites_probe(w, h, slots, n, &hole) : NULL;
  if (found != NULL) return found;

  /* A new stack past the budget (design 9) is looked up by its site's
   * slots, without the lock first, like any stack. */
  backtrace_slot kept[KEPT_MAX];
  bool cut = false;
  if (cut_past_budget
      && atomic_load_relaxed(&whole_bytes) + site_bytes(n) > stackmem) {
    size_t m = keep_site_slots(slots, n, kept);
    if (m < n) {
      slots = kept;
      n = m;
      h = hash_slots(kept, m);
      cut = true;
      found = w ? sites_probe(w, h, slots, n, &hole) : NULL;
      if (found != NULL) {
        mark_cut(found, true);
        return found;
      }
    }
  }

  if (!alone) caml_plat_lock_blocking(&sites_lock);
  uint64_t probed = w;
  w = atomic_load_relaxed(&sites);
  if (w == 0 || 2 * (sites_count + 1) > mask_of(w) + 1) {
    struct site_table *g = sites_grown(w ? table_of(w) : NULL);
    if (g == NULL) goto out;
    w = (uint64_t)g->shift << TAG_SHIFT | (uint64_t)(uintptr_t)g;
    atomic_store_explicit(&sites, w, memory_order_release);
  }
  /* Inserted meanwhile? Only if the table changed or the hole filled:
   * insertions fill holes only, so the same key would have taken the
   * first hole of the same probe sequence. */
  struct site_table *t = table_of(w);
  if (w != probed || atomic_load_relaxed(&t->entry[hole]) != 0) {
    found = sites_probe(w, h, slots, n, &hole);
    if (found != NULL) {
      mark_cut(found, cut);
      goto out;
    }
  }
  if (sites_count == site_refs_capacity) {
    size_t cap = site_refs_capacity ? 2 * site_refs_capacity : 1024;
    struct site_ref *refs = realloc(site_refs, cap * sizeof *refs);
    if (refs == NULL) goto out;
    site_refs = refs;
    site_refs_capacity = cap;
  }
  /* Its counters and peak stamp start at zero: chunks are zeroed memory
   * and no record is ever freed or moved. */
  found = site_room(n);
  if (found == NULL) goto out;
  found->hash = h;
  found->nslots = (uint32_t)n;
  atomic_store_relaxed(&found->cut, cut ? 1 : 0);
  memcpy(found->slots, slots, n * sizeof *slots);
  if (!cut) {
    atomic_store_relaxed(&whole_bytes,
                         atomic_load_relaxed(&whole_bytes) + site_bytes(n));
  }
  site_refs[sites_count].hash = h;
  site_refs[sites_count].site = found;
  atomic_store_explicit(&t->entry[hole], entry_of(h, found),
                        memory_order_release);
  sites_count++;
  slots_count += n;
 out:
  if (!alone) caml_plat_unlock(&sites_lock);
  return found;
}

/* `*c += n`, atomically unless the domain is alone (design 3). */
Caml_inline void add(atomic_uintnat *c, uintnat n, bool alone)
{
  if (alone) atomic_store_relaxed(c, atomic_load_relaxed(c) + n);
  else atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

Caml_inline void bump(struct site *s, int c, uintnat n, bool alone)
{
  add(&s->count[c], n, alone);
}

/**** Live counts and the peak (design 5) ****/

static caml_plat_mutex peak_lock = CAML_PLAT_MUTEX_INITIALIZER;
/* Under peak_lock, or read and written by a domain running alone: */
static uintnat live_total = 0;        /* samples live, all sites */
static uintnat peak_total = 0;        /* the highest live_total so far */
static uintnat peak_epoch = 1;        /* bumped at each new peak */

Caml_inline uintnat site_live(struct site *s)
{
  uintnat n = atomic_load_relaxed(&s->count[CAML_MEMPROF_COUNT_MINOR])
    + atomic_load_relaxed(&s->count[CAML_MEMPROF_COUNT_MAJOR])
    + atomic_load_relaxed(&s->count[CAML_MEMPROF_COUNT_CUSTOM]);
  uintnat dead = atomic_load_relaxed(&s->count[CAML_MEMPROF_COUNT_COLLECTED]);
  return n >= dead ? n - dead : 0;
}

/* Count `n` samples born (`born`) or found dead at `s` in its counter
 * `c`, and keep the peak. */
Caml_inline void live_move(struct site *s, int c, uintnat n, bool born,
                           bool alone)
{
  if (!alone) caml_plat_lock_blocking(&peak_lock);
  if (s->peak_stamp != peak_epoch) {
    atomic_store_relaxed(&s->count[CAML_MEMPROF_COUNT_PEAK_LIVE],
                         site_live(s));
    s->peak_stamp = peak_epoch;
  }
  atomic_store_relaxed(&s->count[c], atomic_load_relaxed(&s->count[c]) + n);
  if (born) {
    live_total += n;
    if (live_total > peak_total) {
      peak_total = live_total;
      peak_epoch++;
    }
  } else {
    live_total -= n;
  }
  if (!alone) caml_plat_unlock(&peak_lock);
}

/**** The tracker's callbacks (called by memprof.c) ****/

/* Design 6: set once at start, before any sample. */
static bool tracing = false;

/**** Cutting a stack at its site (design 8) ****/

static bool cut_at_site = false;

/* The verdict table: 2^18 entries with stacks=site, where every slot
 * of a run at rate 1 gets one; 2^14 for the budget's cuts (design 9). */
#define VERDICT_LOG2_SITE 18
#define VERDICT_LOG2_BUDGET 14
#define VERDICT_PROBES 32
enum { VERDICT_UNKNOWN = 1, VERDICT_STDLIB = 2, VERDICT_SITE = 3 };
static _Atomic(uint64_t) *verdicts = NULL;
static size_t verdict_mask = 0;

Caml_inline bool has_prefix(const char *s, const char *p)
{
  return strncmp(s, p, strlen(p)) == 0;
}

/* Whether a frame named so lies outside the standard library, as the
 * harness's is_stdlib decides it (design 8). */
static bool outside_stdlib(const char *function, const char *file)
{
  if (function != NULL && function[0] != '\0') {
    return !(has_prefix(function, "Stdlib") || has_prefix(function, "Camlinternal")
             || has_prefix(function, "Std_exit"));
  }
  if (file != NULL && file[0] != '\0') {
    const char *base = strrchr(file, '/');
    base = base == NULL ? file : base + 1;
    return !(strcmp(base, "stdlib.ml") == 0 || strcmp(base, "std_exit.ml") == 0
             || has_prefix(base, "camlinternal"));
  }
  return function != NULL || file != NULL;   /* known, with empty names */
}

/* The verdict of `slot` from the frames memprof_frames.c resolves it to
 * (design 4 there: those with a valid location). */
static int verdict_uncached(backtrace_slot slot)
{
  int v = VERDICT_UNKNOWN;
  for (debuginfo d = caml_debuginfo_extract(slot); d != NULL;
       d = caml_debuginfo_next(d)) {
    struct caml_loc_info li;
    memset(&li, 0, sizeof li);
    caml_debuginfo_location(d, &li);
    if (!li.loc_valid) continue;
    if (outside_stdlib(li.loc_defname, li.loc_filename)) return VERDICT_SITE;
    if (li.loc_defname != NULL || li.loc_filename != NULL) v = VERDICT_STDLIB;
  }
  return v;
}

static int slot_verdict(backtrace_slot slot)
{
  uint64_t key = (uint64_t)(uintptr_t)slot << 2;
  uint64_t h = ((uint64_t)(uintptr_t)slot ^ 0x9E3779B97F4A7C15ull)
    * 0xBF58476D1CE4E5B9ull;
  size_t mask = verdict_mask;
  size_t j = (size_t)(h >> 32) & mask;
  int v = 0;
  for (int probe = 0; probe < VERDICT_PROBES; probe++, j = (j + 1) & mask) {
    uint64_t e = atomic_load_explicit(&verdicts[j], memory_order_relaxed);
    if (e == 0) {
      if (v == 0) v = verdict_uncached(slot);
      if (atomic_compare_exchange_strong(&verdicts[j], &e, key | (uint64_t)v)) {
        return v;
      }
    }
    if ((e & ~(uint64_t)3) == key) return (int)(e & 3);
  }
  return v != 0 ? v : verdict_uncached(slot);
}

#ifdef NATIVE_CODE
/* The stack walk's early stop (design 8): a site slot that is not the
 * innermost one, whose verdict the walk cannot know, ends it. */
static int stop_at_site(void *descr)
{
  return slot_verdict(descr) == VERDICT_SITE;
}
#endif

/* The slots of a callstack of `n` slots that design 8 keeps, copied to
 * `kept` (room for KEPT_MAX); their number. */
static size_t keep_site_slots(const backtrace_slot *callstack, size_t n,
                              backtrace_slot *kept)
{
  size_t first = n, via = n, site = n;
  for (size_t k = 0; k < n; k++) {
    int v = slot_verdict(callstack[k]);
    if (v == VERDICT_UNKNOWN) continue;
    if (first == n) first = k;
    if (v == VERDICT_SITE) { site = k; break; }
    via = k;
  }
  if (first == n) {                       /* no known slot */
    if (n > 0) kept[0] = callstack[0];
    return n > 0;
  }
  size_t m = 0;
  kept[m++] = callstack[first];
  if (site == n) return m;
  if (via != n && via != first) kept[m++] = callstack[via];
  if (site != first) kept[m++] = callstack[site];
  return m;
}

/* Loops sample the same stack again and again: a thread's last site
 * is tried first, which needs neither hash nor probe. */
static CAMLthread_local struct site *last_site = NULL;

Caml_inline bool is_last_site(struct site *s, const backtrace_slot *slots,
                              size_t n)
{
  return s != NULL && s->nslots == n && same_slots(s->slots, slots, n);
}

/* Count a sample of `samples` at site `s`. */
static void count_sample(struct site *s, size_t samples, size_t wosize,
                         int source, bool young, bool alone)
{
  bump(s, CAML_MEMPROF_COUNT_BLOCKS, 1, alone);
  if (caml_memprof_src_out_of_heap(source)) {
    bump(s, CAML_MEMPROF_COUNT_WORDS, wosize, alone);  /* design 5 of the header */
    live_move(s, CAML_MEMPROF_COUNT_CUSTOM, samples, true, alone);
  } else {
    bump(s, CAML_MEMPROF_COUNT_WORDS, Whsize_wosize(wosize), alone);
    live_move(s, young ? CAML_MEMPROF_COUNT_MINOR : CAML_MEMPROF_COUNT_MAJOR,
              samples, true, alone);
    if (source == CAML_MEMPROF_SRC_MARSHAL) {
      bump(s, CAML_MEMPROF_COUNT_MARSHAL, samples, alone);
    }
  }
}

static value on_alloc(const struct caml_memprof_c_tracker *t,
                      size_t samples, size_t wosize, int source, bool young,
                      const backtrace_slot *callstack, size_t frames)
{
  (void)t;
  struct caml_memprof_ctf_block *r = NULL;
  if (tracing && (r = caml_memprof_ctf_block()) == NULL) return Val_unit;
  backtrace_slot kept[KEPT_MAX];
  if (cut_at_site) {
    frames = keep_site_slots(callstack, frames, kept);
    callstack = kept;
  }
  bool alone = caml_domain_alone();
  struct site *s = last_site;
  if (!is_last_site(s, callstack, frames)) {
    s = site_of(callstack, frames, hash_slots(callstack, frames), alone);
    if (s == NULL) {
      caml_memprof_ctf_block_free(r);
      return Val_unit;
    }
    last_site = s;
  }
  count_sample(s, samples, wosize, source, young, alone);
  if (r != NULL) {
    r->site = s;
    r->id = caml_memprof_ctf_alloc(wosize, samples, source, young,
                                   callstack, frames);
    return Val_ptr(r);
  }
  return Val_ptr(s);
}

/* The samples of a batch (memprof.c, design 8.10), in three passes so
 * that their cold loads overlap: the table lines of all their stacks
 * are asked for, then the records their entries name, then each sample
 * is counted as `on_alloc` would. The first two passes only prefetch:
 * what they read may be out of date, and the third decides. Not used
 * with a trace, whose events are written as the samples are taken. */
#define BATCH_MAX 32
static void on_alloc_batch(const struct caml_memprof_c_tracker *t,
                           struct caml_memprof_c_sample *batch, size_t n)
{
  (void)t;
  bool alone = caml_domain_alone();
  uint64_t h[BATCH_MAX];
  const backtrace_slot *row[BATCH_MAX];      /* design 8 */
  backtrace_slot kept[BATCH_MAX][KEPT_MAX];
  for (size_t base = 0; base < n; base += BATCH_MAX) {
    struct caml_memprof_c_sample *b = batch + base;
    size_t m = n - base < BATCH_MAX ? n - base : BATCH_MAX;
    uint64_t w = atomic_load_explicit(&sites, memory_order_acquire);
    struct site_table *tab = table_of(w);
    size_t mask = mask_of(w);
    for (size_t k = 0; k < m; k++) {
      if (cut_at_site) {
        row[k] = b[k].callstack;
        b[k].frames = keep_site_slots(row[k], b[k].frames, kept[k]);
        b[k].callstack = kept[k];
      }
      h[k] = hash_slots(b[k].callstack, b[k].frames);
      if (w != 0) caml_prefetch(&tab->entry[h[k] & mask]);
    }
    for (size_t k = 0; w != 0 && k < m; k++) {
      uint64_t e = atomic_load_relaxed(&tab->entry[h[k] & mask]);
      if (e != 0 && e >> TAG_SHIFT == h[k] >> TAG_SHIFT) {
        const char *r = (const char *)entry_site(e);
        size_t bytes = site_bytes(b[k].frames);
        for (size_t at = 0; at < bytes; at += 64) {
          caml_prefetch(r + at);
        }
      }
    }
    for (size_t k = 0; k < m; k++) {
      struct site *s = last_site;
      if (!is_last_site(s, b[k].callstack, b[k].frames)) {
        s = site_of(b[k].callstack, b[k].frames, h[k], alone);
        if (s == NULL) { b[k].data = Val_unit; continue; }
        last_site = s;
      }
      count_sample(s, b[k].samples, b[k].wosize, b[k].source, b[k].young,
                   alone);
      b[k].data = Val_ptr(s);
    }
    /* The batch's rows again, not this frame's copies of their slots. */
    for (size_t k = 0; cut_at_site && k < m; k++) b[k].callstack = row[k];
  }
}

static void on_promote(const struct caml_memprof_c_tracker *t,
                       value data, size_t samples)
{
  (void)t;
  struct site *s = Ptr_val(data);
  if (tracing) {
    struct caml_memprof_ctf_block *r = Ptr_val(data);
    caml_memprof_ctf_promote(r);
    s = r->site;
  }
  bump(s, CAML_MEMPROF_COUNT_PROMOTED, samples, caml_domain_alone());
}

static void on_dealloc(const struct caml_memprof_c_tracker *t,
                       value data, size_t samples)
{
  (void)t;
  struct site *s = Ptr_val(data);
  if (tracing) {
    struct caml_memprof_ctf_block *r = Ptr_val(data);
    s = r->site;
    caml_memprof_ctf_collect(r);
  }
  live_move(s, CAML_MEMPROF_COUNT_COLLECTED, samples, false,
            caml_domain_alone());
}

/* With a trace, samples are taken one by one (on_alloc_batch). */
static const struct caml_memprof_c_tracker tracker = {
  on_alloc, on_promote, on_dealloc, on_alloc_batch
};
static const struct caml_memprof_c_tracker tracker_traced = {
  on_alloc, on_promote, on_dealloc, NULL
};

static value profile = Val_unit;   /* generational global root */

const atomic_uintnat *caml_memprof_tracker_site_counts(value data)
{
  struct site *s = Ptr_val(data);
  if (tracing) s = ((struct caml_memprof_ctf_block *)Ptr_val(data))->site;
  return s->count;
}

/* The peak is final from here on (design 5): no later event can make
 * a new one. Called once sampling has stopped, before the judgment. */
static void peak_freeze(void)
{
  caml_plat_lock_blocking(&peak_lock);
  peak_total = CAML_UINTNAT_MAX;
  caml_plat_unlock(&peak_lock);
}

/* The stacks of every site so far, resolved as their records are read
 * in creation order (one pass over megabytes of records, not one to
 * list them and another to resolve them) and sorted; `*n` is their
 * number. NULL when out of memory. Reads only what never changes in a
 * record, so it may run beside the judgment, which takes no sites_lock
 * (settle_and_sum, after it, does). */
static struct caml_memprof_sorted *list_and_sort_sites(size_t *n)
{
  caml_plat_lock_blocking(&sites_lock);
  *n = sites_count;
  struct caml_memprof_sorting *so =
    caml_memprof_sorting_start(sites_count, slots_count);
  bool ok = so != NULL;
  for (struct chunk *c = chunks_first; ok && c != NULL; c = c->next) {
    for (size_t at = 0; ok && at < c->used;) {
      struct site *s = next_record(c, &at);
      ok = caml_memprof_sorting_add(so, s->slots, s->nslots, s->count,
                                    atomic_load_relaxed(&s->cut) != 0);
    }
  }
  caml_plat_unlock(&sites_lock);
  return caml_memprof_sorting_end(so);
}

/* Settle the peak for the first `n` sites (or all, if fewer) and sum
 * their counts into `total` (COUNT_SAMPLES derived); returns how many
 * sites that was. Runs after the judgment: a site not changed since the
 * last peak (its stamp is older) had its present live count then; one
 * changed since, the judgment's deaths included, was stamped at its
 * first change. One pass over the records for both, since a program
 * with a stack per sample has megabytes of them. */
static size_t settle_and_sum(size_t n, uintnat total[N_COUNTS])
{
  for (int k = 0; k < N_COUNTS; k++) total[k] = 0;
  caml_plat_lock_blocking(&sites_lock);
  caml_plat_lock_blocking(&peak_lock);
  size_t i = 0;
  for (struct chunk *c = chunks_first; i < n && c != NULL; c = c->next) {
    for (size_t at = 0; i < n && at < c->used; i++) {
      struct site *s = next_record(c, &at);
      if (s->peak_stamp != peak_epoch) {
        atomic_store_relaxed(&s->count[CAML_MEMPROF_COUNT_PEAK_LIVE],
                             site_live(s));
        s->peak_stamp = peak_epoch;
      }
      for (int k = 0; k < N_COUNTS; k++) {
        total[k] += atomic_load_relaxed(&s->count[k]);
      }
    }
  }
  caml_plat_unlock(&peak_lock);
  caml_plat_unlock(&sites_lock);
  total[CAML_MEMPROF_COUNT_SAMPLES] = total[CAML_MEMPROF_COUNT_MINOR]
    + total[CAML_MEMPROF_COUNT_MAJOR] + total[CAML_MEMPROF_COUNT_CUSTOM];
  return i;
}

/* How many sites there are now. */
static size_t sites_now(void)
{
  caml_plat_lock_blocking(&sites_lock);
  size_t n = sites_count;
  caml_plat_unlock(&sites_lock);
  return n;
}

/* Design 10's state. */
atomic_uintnat caml_memprof_snapshot_requested = 0;
static atomic_uintnat finished = 0;     /* the finish has begun */
static atomic_uintnat snapshots_numbered = 0;
/* In a snapshot's child: the path its profile goes to, else NULL. */
static const char *snapshot_child_out = NULL;

/* Listing and sorting the stacks for the profile (memprof_profile.h)
 * need none of the counts, so in native code they run beside this
 * thread while this one judges reachability (design 4): on a machine
 * with a core to spare, the exit then takes the longer of the two
 * rather than their sum. In bytecode, whose debug information may be
 * loaded into the OCaml heap on first use, they run when the result is
 * wanted. */
struct sorting {
  size_t n;
  struct caml_memprof_sorted *sorted;
  struct caml_memprof_beside w;
};

static void *list_and_sort(void *arg)
{
  struct sorting *s = arg;
  s->sorted = list_and_sort_sites(&s->n);
  return NULL;
}

static void sorting_start(struct sorting *s)
{
  s->n = 0;
  s->sorted = NULL;
#ifdef NATIVE_CODE
  /* Not in a snapshot's child (design 10): there a new thread may be
   * given the stack of one of the program's other threads (the C
   * library reuses them after a fork), whose local roots the walk has
   * yet to read. */
  caml_memprof_beside_start(&s->w, list_and_sort, s,
                            snapshot_child_out == NULL);
#else
  caml_memprof_beside_start(&s->w, list_and_sort, s, false);
#endif
}

/* The listing and sorting done; `s->sorted` is NULL when out of memory.
 * A site another domain created after the listing (it was inside a
 * callback when sampling stopped) must be in the profile too: then
 * they are done again, here. */
static void sorting_finish(struct sorting *s)
{
  caml_memprof_beside_join(&s->w);
  if (s->sorted != NULL && sites_now() != s->n) {
    caml_memprof_sorted_free(s->sorted);
    list_and_sort(s);
  }
}

/**** Snapshots on demand (design 10) ****/


#ifndef _WIN32
static void on_snapshot_signal(int signo)
{
  (void)signo;
  int saved_errno = errno;
  atomic_store_relaxed(&caml_memprof_snapshot_requested, 1);
  caml_interrupt_all_signal_safe();
  errno = saved_errno;
}
#endif

static void install_snapshot_signal(void)
{
#ifndef _WIN32
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_snapshot_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  if (sigaction(SIGUSR1, &sa, NULL) != 0) {
    fprintf(stderr, "%s: cannot handle SIGUSR1 for snapshot=signal: %s\n",
            CAML_MEMPROF_ENV_VAR, strerror(errno));
    exit(2);
  }
#endif
}

/* Take a snapshot (design 10), labelled `at`: NULL and the path written
 * in `*path_out` (malloc'd), or why none was. */
static const char *take_snapshot(const char *at, char **path_out)
{
  *path_out = NULL;
#ifdef _WIN32
  (void)at;
  return "snapshots on demand need fork()";
#else
  if (profile == Val_unit || atomic_load(&finished)) {
    return "the tracker is not running";
  }
  if (!caml_domain_alone()) return "another domain is running";
  unsigned long n = atomic_fetch_add(&snapshots_numbered, 1) + 1;
  char *path = caml_memprof_expand_numbered(caml_memprof_env()->snapshot_out, n);
  if (path == NULL) return "out of memory";
  struct stat before;                   /* for ECHILD below */
  bool existed = stat(path, &before) == 0;
  pid_t pid = fork();
  if (pid < 0) {
    free(path);
    return "fork failed";
  }
  if (pid == 0) {
    /* As Unix.fork's child does, but keeping the other threads'
     * descriptors: their saved stacks are roots of the walk. The domain
     * lock was taken by a thread the child does not have (bytecode
     * releases it to read the debug information). */
    caml_reset_domain_lock();
    caml_acquire_domain_lock();
    caml_runtime_events_post_fork();
    snapshot_child_out = path;
    caml_memprof_snapshot_taken_at(at);
    _exit(caml_memprof_tracker_finish(0) == 0 ? 0 : 2);
  }
  int status = 0;
  pid_t r;
  while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
  /* ECHILD: the program reaped the child itself (SIGCHLD ignored, or a
   * handler of its own). The file tells: a new one is renamed into
   * place, so it is another file than any that was there before. */
  struct stat after;
  bool ok = r == pid ? WIFEXITED(status) && WEXITSTATUS(status) == 0
    : stat(path, &after) == 0
      && (!existed || after.st_ino != before.st_ino
          || after.st_dev != before.st_dev);
  if (!ok) {
    free(path);
    return "the snapshot's process failed";
  }
  *path_out = path;
  return NULL;
#endif
}

static void snapshot_failed(const char *at, const char *why)
{
  fprintf(stderr, "%s: no snapshot on %s: %s\n", CAML_MEMPROF_ENV_VAR,
          strcmp(at, "signal") == 0 ? "SIGUSR1" : "the program's call", why);
}

void caml_memprof_tracker_snapshot_requested(void)
{
  if (!atomic_exchange(&caml_memprof_snapshot_requested, 0)) return;
  char *path;
  const char *why = take_snapshot("signal", &path);
  if (why != NULL) snapshot_failed("signal", why);
  free(path);
}

CAMLprim value caml_memprof_ci_snapshot(value unit)
{
  CAMLparam1(unit);
  CAMLlocal1(res);
  const struct caml_memprof_env *env = caml_memprof_env();
  char *path = NULL;
  if (env->tracking) {          /* unprofiled, the call is silent */
    const char *why = env->snapshot_on_call ? take_snapshot("call", &path)
      : "OCAMLMEMPROF's snapshot= does not include call";
    if (why != NULL) snapshot_failed("call", why);
  }
  res = caml_copy_string(path != NULL ? path : "");
  free(path);
  CAMLreturn(res);
}

/**** Start ****/

static char **argv_copy = NULL;
static size_t argc_copy = 0;

void caml_memprof_tracker_start(void)
{
  const struct caml_memprof_env *env = caml_memprof_env();
  if (!env->tracking) return;
  caml_memprof_out_reserve();           /* memprof_outfile.c, design 6 */

  /* Copy Sys.argv now, while it is as the runtime received it. */
  value argv = caml_sys_argv(Val_unit);
  argc_copy = Wosize_val(argv);
  argv_copy = calloc(argc_copy ? argc_copy : 1, sizeof *argv_copy);
  for (size_t i = 0; argv_copy != NULL && i < argc_copy; i++) {
    argv_copy[i] = strdup(String_val(Field(argv, i)));
  }
  if (argv_copy == NULL) argc_copy = 0;

#ifdef NATIVE_CODE
  bool budget = !env->stacks_at_site;
#else
  bool budget = false;                  /* design 9 */
#endif
  if (env->stacks_at_site || budget) {
    unsigned log2 = budget ? VERDICT_LOG2_BUDGET : VERDICT_LOG2_SITE;
    verdicts = calloc((size_t)1 << log2, sizeof *verdicts);
    if (verdicts == NULL) {
      fprintf(stderr, "%s: out of memory for the stacks' verdicts\n",
              CAML_MEMPROF_ENV_VAR);
      exit(2);
    }
    verdict_mask = ((size_t)1 << log2) - 1;
  }
  if (budget) {
    stackmem = env->stackmem;
    cut_past_budget = true;
  }
  if (env->stacks_at_site) {
    cut_at_site = true;
#ifdef NATIVE_CODE
    caml_collect_frame_descrs_stop = stop_at_site;
#else
    struct caml_loc_info li;    /* design 8: read the debug information */
    caml_debuginfo_location(
      caml_debuginfo_extract((backtrace_slot)caml_start_code), &li);
#endif
  }
  if (env->trace != NULL) {
    caml_memprof_ctf_start(env->trace, env->rate);
    tracing = true;
  }

  if (env->snapshot_on_signal) install_snapshot_signal();
  if (env->points) caml_memprof_points_start();     /* memprof_points.c */
  caml_memprof_budgets_start();                     /* memprof_budgets.c */

  caml_register_generational_global_root(&profile);
  caml_modify_generational_global_root(
    &profile, caml_memprof_start_c(env->rate, env->frames,
                                   tracing ? &tracker_traced : &tracker));
}

/**** Finish ****/

/* Why the run ended abnormally (finish_incomplete), else NULL. */
static const char *incomplete_reason;

/* The outfile's render callback (design 4). */
struct rendering {
  const struct caml_memprof_sorted *sorted;
  const struct caml_memprof_gc_totals *gc;
  const uintnat *totals;
  struct caml_memprof_snapshot *snapshot;    /* or NULL */
};

static bool render(struct caml_memprof_buf *b, void *data)
{
  const struct rendering *r = data;
  if (r->sorted == NULL) return false;
  struct caml_memprof_profile p = { r->sorted, r->totals, r->gc, argv_copy,
                                    argc_copy, incomplete_reason,
                                    r->snapshot };
  return caml_memprof_render_profile(b, &p);
}

int caml_memprof_tracker_finish(int retcode)
{
  return caml_memprof_tracker_finish_incomplete(retcode, NULL);
}

int caml_memprof_tracker_finish_incomplete(int retcode, const char *reason)
{
  static char reason_copy[256];
  if (profile == Val_unit) return retcode;
  if (atomic_exchange(&finished, 1)) return retcode;
  if (reason != NULL) {     /* the caller's buffer may not outlive us */
    snprintf(reason_copy, sizeof reason_copy, "%s", reason);
    incomplete_reason = reason_copy;
  }

  caml_memprof_stop_c(profile);
  peak_freeze();
  caml_memprof_release_minor_free();  /* for the exit's own memory */
  const char *tmpl = snapshot_child_out != NULL ? snapshot_child_out
    : caml_memprof_env()->out;
  struct sorting sorting;
  if (tmpl != NULL) sorting_start(&sorting);
  struct caml_memprof_gc_totals g = caml_memprof_read_gc_totals();

  /* Reachability at exit, not GC timing, decides "live": by a walk of
   * the heap (memprof_reach.c) where that is exact, else by the GC.
   * memprof judges major blocks when a cycle ends
   * (caml_memprof_after_major_gc, before the colours flip), so two
   * cycle ends suffice: the one in progress, which may still have
   * marked a block that died since, and one whose marking starts after
   * now and finds exactly the reachable blocks. gc_full_major_res runs
   * a third cycle only to sweep. With live=off nothing decides: the
   * blocks not collected yet count as live. */
  enum caml_memprof_live live = caml_memprof_env()->live;
  struct caml_memprof_snapshot *snapshot = NULL;
  bool judged = false;
  if (caml_memprof_env()->snapshot_at_exit || snapshot_child_out != NULL) {
    snapshot = caml_memprof_snapshot_judge(&judged);  /* memprof_snapshot.c */
  }
  if (live == CAML_MEMPROF_LIVE_GC
      || (live == CAML_MEMPROF_LIVE_WALK && !judged
          && !(judged = caml_memprof_judge_by_reachability()))) {
    caml_minor_collection();
    for (int i = 0; i < 2; i++) caml_finish_major_cycle(0);
  }
  caml_memprof_points_live_end(
    judged ? NULL
    : live == CAML_MEMPROF_LIVE_GC
    ? "live=gc: major cycles judge liveness, no walk"
    : live == CAML_MEMPROF_LIVE_OFF ? "live=off: liveness not decided"
    : "no walk of the heap at exit: another domain was running, an "
      "ephemeron was created, or the walk ran out of memory");

  if (tracing) {
    int terr = caml_memprof_ctf_finish();
    if (terr != 0) {
      fprintf(stderr, "%s: cannot write the trace to '%s': %s\n",
              CAML_MEMPROF_ENV_VAR, caml_memprof_ctf_path(), strerror(terr));
      if (retcode == 0) retcode = 2;
    }
  }
  if (tmpl == NULL) {
    caml_memprof_snapshot_free(snapshot);
    return retcode;
  }
  /* While the other thread may still be sorting; the listing has every
   * site unless another domain created one since. */
  uintnat total[N_COUNTS];
  size_t summed = settle_and_sum(SIZE_MAX, total);
  sorting_finish(&sorting);
  if (summed != sorting.n) settle_and_sum(sorting.n, total);
  struct rendering r = { sorting.sorted, &g, total, snapshot };
  char *path = snapshot_child_out != NULL ? strdup(snapshot_child_out)
    : caml_memprof_expand_out(tmpl);
  int err = path == NULL ? ENOMEM : caml_memprof_write_out(path, render, &r);
  if (err != 0) {
    fprintf(stderr, "%s: cannot write the allocation profile to '%s': %s\n",
            CAML_MEMPROF_ENV_VAR, path ? path : tmpl, strerror(err));
    if (retcode == 0) retcode = 2;
  }
  caml_memprof_sorted_free(sorting.sorted);
  caml_memprof_snapshot_free(snapshot);
  free(path);
  return retcode;
}
