/* memprof-ci: exact counts per allocation point (OCAMLMEMPROF points=on).
 *
 * 1. Ids. The runtime is configured with reserved header bits
 *    (HEADER_RESERVED_BITS, build-runtime.sh), and a block's allocation
 *    point is its header's reserved bits. Native code writes them: the
 *    compiler gives each allocation point of a unit an index in the
 *    unit's table, and each allocation loads its whole header from a
 *    word of that table (selectgen.ml), linked with the all-ones id.
 *    This file assigns each unit a base when it registers the tables
 *    (the units linked in at start, `caml_alloc_sites`, the list the
 *    startup file ends with; a plugin's units when natdynlink loads
 *    them, before their code runs) and writes base + index into the
 *    reserved bits of each header word. A table of n points gets a base
 *    aligned to the power of two P >= n, above the pseudo ids, so two
 *    units' ids never meet. A table never registered keeps its header
 *    words, so its blocks carry CAML_POINT_UNREGISTERED: a native
 *    toplevel phrase, a unit past the id space, or any unit while
 *    counting is off (registering is then skipped, and nothing reads
 *    the bits).
 * 2. Blocks that no OCaml allocation point made. Unmarshalled blocks
 *    carry CAML_POINT_UNMARSHAL (intern.c), as does the unused rest of
 *    the minor-heap block a message that failed part way was read into
 *    (one header over it, so the walk of design 4 steps over it), and
 *    copies CAML_POINT_DUP (Obj.dup and Obj.with_tag, obj.c, which also
 *    serve {r with ...} on large records). Every other block the runtime allocates (C
 *    primitives: caml_alloc_string, caml_copy_double, caml_make_vect,
 *    custom blocks, ...; a native allocation too large for the minor
 *    heap, caml_alloc_shr_check_gc) carries the id of the OCaml call
 *    that is running the C code, a "call point" (design 6), or
 *    CAML_POINT_RUNTIME when there is none with a source location. All
 *    of bytecode's blocks are CAML_POINT_RUNTIME: its interpreter builds
 *    them at run time with no table of points.
 * 3. Counting, on per-domain arrays indexed by id, each mapped once for
 *    the whole id space (pages are touched only where ids are used), so
 *    no array ever moves and no registration has to grow one; a later
 *    domain in the same slot adds to the same arrays. Nothing is
 *    allocated on the OCaml heap and no collection is moved.
 *    - Minor: each block allocated in the minor heap, by a walk of its
 *      header (design 4), into one packed word per id that the domain
 *      adds to its pairs now and then (`settle`, at `struct
 *      domain_counts`).
 *    - Major: caml_alloc_shr and its variants, and unmarshalling's own
 *      major allocation.
 *    - Promoted: in oldify, by the domain whose update of the young
 *      header succeeds, so a block two domains race for counts once,
 *      packed like the minor counts (`promoted_end` after the domain's
 *      part of each collection adds them up now and then).
 *    - Live at exit: each block the exit's walk of reachability enters
 *      (memprof_reach.c, or memprof_snapshot.c's walk), counted afresh
 *      by each walk (`live_begin`); without a completed walk the profile
 *      says why live is not given.
 * 4. The walk of the minor heap. Each domain counts the blocks of
 *    [young_ptr, walked) and then moves `walked` down to young_ptr, so
 *    that [walked, young_end) is what it has counted. `walked` is
 *    young_end whenever the minor heap starts empty (a new heap,
 *    allocate_minor_heap in domain.c, which also serves a new domain in
 *    a reused slot, and the main domain's heap when counting starts; the
 *    end of each collection), and neither it nor a boundary kept below
 *    it (see Chunks) ever lies below young_ptr: both are taken only at
 *    young_ptr with no allocation pending, everything above is
 *    headered, and an allocation undone later (by the
 *    dispatcher, or by memprof before its callbacks, or cancelled by a
 *    callback that raised) was made below a pointer at least that high.
 *    So every block is counted exactly once, by its own domain, before
 *    the collection that promotes or frees it.
 *    - Chunks. The heap is walked while what was just allocated is
 *      still in the cache, a chunk of CAML_POINTS_SEGMENTS segments of
 *      about SEGMENT_BYTES at a time. The domain's `trigger`, one
 *      segment below the lowest boundary it keeps (or `walked`), is a
 *      third part of the allocation limit beside the collection's and
 *      memprof's (caml_young_limit_of_triggers, domain.c); none when
 *      that lies below the heap. An allocation that falls below it (from
 *      OCaml, combined or not, or from C through Alloc_small) enters
 *      caml_alloc_small_dispatch (minor_gc.c) with the allocation of
 *      whsize words made and not yet headered; young_ptr + whsize, the
 *      pointer with the allocation undone, is a boundary between blocks
 *      (`at_boundary`). The domain keeps it, or with the chunk's other
 *      boundaries kept already it counts the chunk [boundary, walked):
 *      its segments eight side by side, since the walk of one segment is
 *      a chain of loads (each header gives the next one's address) and
 *      independent chains overlap; that, not the cache, is what a walk
 *      of one segment at a time waits on (memprof_points_walk.h). The
 *      limit is then set again by a compare-and-swap from the value just
 *      read, unless an
 *      interrupt has raised it to the maximum; if the allocation passes
 *      the new limit, the dispatcher returns at once, with no actions
 *      run, no poll of the GC's work (which requests a collection early
 *      when the pointer is near the collection's trigger) and
 *      action_pending untouched: such a trip changes nothing the
 *      program or the GC can see. Otherwise the dispatcher goes on as
 *      it would without the points: memprof's trigger, the collection's
 *      or an interrupt was passed too, and they now find the limit they
 *      set.
 *    - Allocations the limit did not check. The dispatcher's usual path
 *      undoes the allocation, runs actions (signal handlers, finalisers,
 *      memprof's callbacks: they allocate, and walk chunks) and perhaps
 *      a collection, then makes the allocation again without a check,
 *      after which memprof's sampling may undo it, run callbacks and
 *      make it again. The allocation made again may lie below the
 *      trigger, so the dispatcher's last step (`after_alloc`) takes the
 *      boundary above it as above and sets the limit again; and a
 *      callback that raised leaves the allocation undone with the
 *      trigger possibly above young_ptr.
 *      For both, the points' part of the limit is never above young_ptr
 *      (caml_memprof_points_limit): a trigger passed unchecked makes the
 *      next allocation take the slow path, never a poll. That part is one
 *      byte below the trigger, so a poll does not fire while young_ptr
 *      rests on the trigger (as memprof's, memprof.c design 8.7), and the
 *      allocation check is unchanged for the word-aligned pointer.
 *    - The collection. At its start, before anything is promoted, each
 *      domain walks the rest, [young_ptr, walked), of its own heap (by
 *      the segments its boundaries mark), and with several domains in
 *      the collection all meet at a barrier before promoting, so no
 *      header is forwarded under a walk. A chunk
 *      walk runs outside collections, on the domain's own heap, whose
 *      headers no other domain changes then (Lazy's tag updates keep the
 *      size and the reserved bits). A terminating domain's last
 *      collection walks what it left.
 *    - Runs of equal headers are counted together (when four segments
 *      side by side all read one header, and at the end of a segment):
 *      the next header's address then does not wait on a load of the
 *      size, nor one update of a counter on the one before.
 * 5. The profile's "points" section lists the points with any count:
 *    the pseudo points by name, then each registered unit's points in
 *    table order, each with its file, line, characters and function as
 *    the compiler wrote them, and its counts; then its "calls", the call
 *    points in the order they were first seen, each with the location
 *    of its call's innermost frame as the profile's stacks give it.
 * 6. Call points. Every block the runtime allocates through Alloc_small
 *    or caml_alloc_shr (memory.h, memory.c: Caml_alloc_c_reserved) asks
 *    `c_caller` for its id while points are counted. The OCaml call now
 *    in C is the return address the current stack saved on its switch to
 *    C (caml_get_stack_sp_pc: caml_c_call, or caml_call_gc at a poll),
 *    the innermost OCaml frame of the stack a sample of the block
 *    records. Each distinct return address gets its id the first time a
 *    block asks: a new id for a frame with a valid source location, else
 *    CAML_POINT_RUNTIME (no frame descriptor, as before any OCaml code
 *    runs, or a unit compiled without -g), under tables_lock, in a table
 *    that only grows. A direct-mapped cache per domain slot serves the
 *    return addresses seen before without the lock, in about twenty
 *    instructions; its empty entries (return address 0) already give
 *    CAML_POINT_RUNTIME, which is the right answer for 0. The id depends only on the return address, so
 *    every block a call allocates in C counts at its call point however
 *    deep in C it is made, and a program's runs that allocate alike
 *    number their call points alike.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/mman.h>
#endif
#include "caml/backtrace_prim.h"
#include "caml/domain.h"
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/stack.h"
#include "caml/frame_descriptors.h"
#include "caml/memprof.h"
#include "caml/memprof_jsonbuf.h"
#include "caml/memprof_points.h"
#include "caml/mlvalues.h"
#include "caml/platform.h"

bool caml_memprof_points_on = false;
bool caml_memprof_points_live_on = false;

#if HEADER_RESERVED_BITS > 0 && defined(NATIVE_CODE) && !defined(_WIN32)

#define N_IDS ((uintnat)1 << HEADER_RESERVED_BITS)

/* A unit's table, as selectgen.ml lays it out. */
struct points_table {
  uintnat base;                 /* Hd_reserved(first id), or all ones */
  uintnat count;                /* points */
  uintnat nheaders;             /* header words */
  header_t headers[];  /* nheaders words, then uint32_t index[nheaders],
                          then count of "file\tfn line,start,end\0" */
};

static uint32_t *table_index(struct points_table *t)
{
  return (uint32_t *)(t->headers + t->nheaders);
}

static const char *table_entries(struct points_table *t)
{
  return (const char *)(table_index(t) + t->nheaders);
}

struct registered { struct points_table *t; uintnat first; };

static caml_plat_mutex tables_lock = CAML_PLAT_MUTEX_INITIALIZER;
static struct registered *tables = NULL;        /* under tables_lock */
static size_t ntables = 0, tables_cap = 0;
static uintnat next_id = CAML_POINT_FIRST;      /* under tables_lock */
static bool exhausted = false;

/* A point's counts (memprof_points.h). */
typedef struct caml_memprof_points_pair pair;

/* A domain's minor counts are packed, one word per id, so that the
 * walk updates one word per block: it adds PACK_ONE + wosize, the
 * blocks above PACK_SHIFT and the sum of their fields below. Each block
 * has a header and a field at least, so both sums stay in their bits
 * while the words of the minor heaps cycled through since they were
 * last added to `minor` are below 2^32. The domain adds them
 * (`settle`) at the start of a cycle that would take those words past
 * PACK_ROOM, or at every cycle if its minor heap is larger (up to
 * 2^32 - 2 words, 32 GiB). */
#define PACK_SHIFT CAML_POINTS_PACK_SHIFT
#define PACK_ONE CAML_POINTS_PACK_ONE
#define PACK_ROOM ((uint64_t)1 << 26)

/* Promotions are packed the same way, in `packed_promoted`: what a
 * domain promotes in one collection is at most the words it allocates in
 * the major heap during it, which it adds up after each
 * (`promoted_words`), and it settles them into `promoted` once that
 * passes PACK_ROOM. Their sums stay in their bits
 * while no collection promotes 2^33 - 2^26 words (64 GiB). */
struct domain_counts {
  pair *minor, *major, *promoted;
  uint64_t *packed, *packed_promoted;
  uint64_t packed_words;     /* minor heap words since the last settling */
  uint64_t promoted_words;   /* a bound on the words packed in promotions */
};
static struct domain_counts per_domain[Max_domains_max];
static _Atomic int slots_used = 0;        /* 1 + the highest slot with counts */
static pair *live = NULL;
static const char *live_missing = "no walk of the heap at exit";

/* Bytes of minor heap per segment; CAML_POINTS_SEGMENTS of them make a
 * chunk (design 4). */
#define SEGMENT_BYTES ((uintnat)32 * 1024)

struct caml_memprof_points_young caml_memprof_points_young[Max_domains_max];
uint64_t *caml_memprof_points_promoted_counts[Max_domains_max];

static void *id_map(size_t entry)
{
  void *p = mmap(NULL, N_IDS * entry, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) caml_fatal_error("memprof-ci: out of memory for the "
                                        "allocation points' counters");
  return p;
}

static pair *id_array(void) { return id_map(sizeof(pair)); }

/* The domain's arrays, created by its first count of any kind. Only the
 * domain itself counts into them (a block it promotes from another
 * domain's heap counts in its own arrays), so creating them needs no
 * lock; slots_used is raised atomically, for the profile's sums. */
static Caml_noinline void counts_create(caml_domain_state *d,
                                         struct domain_counts *c)
{
  c->major = id_array();
    c->promoted = id_array();
    c->minor = id_array();
    c->packed = id_map(sizeof(uint64_t));
    c->packed_promoted = id_map(sizeof(uint64_t));
    caml_memprof_points_promoted_counts[d->id] = c->packed_promoted;
  int used = atomic_load(&slots_used);
  while (used <= d->id
         && !atomic_compare_exchange_weak(&slots_used, &used, d->id + 1)) { }
}

Caml_inline struct domain_counts *counts_of(caml_domain_state *d)
{
  struct domain_counts *c = &per_domain[d->id];
  if (CAMLunlikely(c->minor == NULL)) counts_create(d, c);
  return c;
}

void caml_memprof_points_register(void *table)
{
  struct points_table *t = table;
  if (!caml_memprof_points_on || t->count == 0) return;
  uintnat size = 1;
  while (size < t->count) size <<= 1;
  caml_plat_lock_blocking(&tables_lock);
  uintnat base = (next_id + size - 1) & ~(size - 1);
  bool room = base + size <= CAML_POINT_UNREGISTERED;
  if (room && ntables == tables_cap) {
    size_t cap = tables_cap ? 2 * tables_cap : 256;
    struct registered *grown = realloc(tables, cap * sizeof *grown);
    if (grown == NULL) room = false;
    else { tables = grown; tables_cap = cap; }
  }
  if (room) {
    tables[ntables++] = (struct registered){ t, base };
    next_id = base + size;
    t->base = Hd_reserved(base);
    /* Each allocation loads its header from the table: give it its id. */
    const uint32_t *index = table_index(t);
    for (uintnat j = 0; j < t->nheaders; j++) {
      t->headers[j] = (t->headers[j] & ~Hd_reserved(CAML_POINT_UNREGISTERED))
                      | Hd_reserved(base + index[j]);
    }
  } else {
    exhausted = true;
  }
  caml_plat_unlock(&tables_lock);
}

extern void *caml_alloc_sites[];

void caml_memprof_points_start(void)
{
  caml_memprof_points_on = true;
  live = id_array();
  counts_of(Caml_state);
  for (void **t = caml_alloc_sites; *t != NULL; t++) {
    caml_memprof_points_register(*t);
  }
  /* The main domain's minor heap exists already: what it holds is
   * counted like the rest. */
  caml_memprof_points_minor_heap_reset(Caml_state);
  caml_reset_young_limit_quiet(Caml_state);
}

/**** Call points (design 6) ****/

/* Return address -> id, open addressing (at most half full), and the
 * call points in the order of their ids; all under tables_lock. */
struct call_entry { uintnat pc, id; };
static struct call_entry *call_index = NULL;
static size_t call_index_cap = 0, call_index_count = 0;
struct call_point { frame_descr *d; uintnat id; };
static struct call_point *call_points = NULL;
static size_t ncalls = 0, calls_cap = 0;

static size_t call_hash(uintnat pc)
{
  uint64_t h = (uint64_t)pc * 0x9E3779B97F4A7C15ull;
  return (size_t)(h ^ (h >> 29));
}

static struct call_entry *call_find(uintnat pc)
{
  size_t mask = call_index_cap - 1;
  size_t j = call_hash(pc) & mask;
  while (call_index[j].pc != 0 && call_index[j].pc != pc) j = (j + 1) & mask;
  return &call_index[j];
}

/* The first frame of `d` with a valid source location, as the profile's
 * stacks resolve it (memprof_frames.c); false if none. */
static bool call_location(frame_descr *d, struct caml_loc_info *li)
{
  for (debuginfo i = caml_debuginfo_extract((backtrace_slot)d); i != NULL;
       i = caml_debuginfo_next(i)) {
    memset(li, 0, sizeof *li);
    caml_debuginfo_location(i, li);
    if (li->loc_valid) return true;
  }
  return false;
}

/* A new return address's id; with tables_lock held. Out of memory or
 * of ids, the block counts as the runtime's; so does the return address
 * into C that marks the top of a stack chunk (what the stack saved last
 * when OCaml code has returned to C for good), which has no debug
 * information to read. */
static uintnat new_call(uintnat pc)
{
  frame_descr *d = caml_find_frame_descr(caml_get_frame_descrs(), pc);
  struct caml_loc_info li;
  uintnat id = CAML_POINT_RUNTIME;
  if (d != NULL && !frame_return_to_C(d) && frame_has_debug(d)
      && call_location(d, &li)
      && next_id < CAML_POINT_UNREGISTERED) {
    if (ncalls == calls_cap) {
      size_t cap = calls_cap ? 2 * calls_cap : 256;
      struct call_point *grown = realloc(call_points, cap * sizeof *grown);
      if (grown == NULL) return CAML_POINT_RUNTIME;
      call_points = grown;
      calls_cap = cap;
    }
    id = next_id++;
    call_points[ncalls++] = (struct call_point){ d, id };
  }
  if (2 * (call_index_count + 1) > call_index_cap) {
    size_t cap = call_index_cap ? 2 * call_index_cap : 1024;
    struct call_entry *old = call_index;
    size_t old_cap = call_index_cap;
    call_index = calloc(cap, sizeof *call_index);
    if (call_index == NULL) {
      /* unindexed: asked again, it gets another id of the same location */
      call_index = old;
      return id;
    }
    call_index_cap = cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].pc != 0) *call_find(old[i].pc) = old[i];
    free(old);
  }
  *call_find(pc) = (struct call_entry){ pc, id };
  call_index_count++;
  return id;
}

/* Per domain slot, a direct-mapped cache of return addresses' ids,
 * created by the slot's first miss; a later domain in the slot reuses
 * it, as the ids are global. */
#define CALL_CACHE 512
struct call_cached { uintnat pc, id; };
static struct call_cached *call_cache[Max_domains_max];

static size_t call_slot(uintnat pc)
{
  return (pc ^ (pc >> 9)) & (CALL_CACHE - 1);
}

/* The cache missed (or is not there yet). */
static Caml_noinline uintnat call_miss(caml_domain_state *d, uintnat pc)
{
  struct call_cached *cache = call_cache[d->id];
  if (cache == NULL) {
    cache = calloc(CALL_CACHE, sizeof *cache);
    if (cache == NULL) return CAML_POINT_RUNTIME;
    call_cache[d->id] = cache;
  }
  caml_plat_lock_blocking(&tables_lock);
  uintnat id;
  if (pc == 0) {
    id = CAML_POINT_RUNTIME;
  } else {
    struct call_entry *found = call_index_cap ? call_find(pc) : NULL;
    id = found != NULL && found->pc == pc ? found->id : new_call(pc);
  }
  caml_plat_unlock(&tables_lock);
  cache[call_slot(pc)] = (struct call_cached){ pc, id };
  return id;
}

/* The hit path: the return address as caml_get_stack_sp_pc reads it,
 * and one compare. A stack's saved pointer always lies within it, up to
 * its top, whose next word is still the stack's own memory. */
reserved_t caml_memprof_points_c_caller(void)
{
  caml_domain_state *d = Caml_state;
  struct stack_info *s = d->current_stack;
  if (CAMLunlikely(s == NULL)) return CAML_POINT_RUNTIME;
  uintnat pc = (uintnat)Saved_return_address(First_frame((char *)s->sp));
  struct call_cached *cache = call_cache[d->id];
  if (CAMLlikely(cache != NULL)) {
    struct call_cached *e = &cache[call_slot(pc)];
    if (e->pc == pc) return Caml_point_reserved(e->id);
  }
  return Caml_point_reserved(call_miss(d, pc));
}

/**** The minor heap, chunk by chunk (design 4) ****/

#include "caml/memprof_points_walk.h"

/* Count [low, walked), with the domain's boundaries, and forget them. */
static void count_below_walked(caml_domain_state *d,
                               struct caml_memprof_points_young *y,
                               value *low)
{
  header_t *p[CAML_POINTS_SEGMENTS], *e[CAML_POINTS_SEGMENTS];
  int n = 0;
  value *top = y->walked;
  for (int i = 0; i < y->nbound; i++) {
    p[n] = (header_t *)y->bound[i];
    e[n++] = (header_t *)top;
    top = y->bound[i];
  }
  if (low < top) {
    p[n] = (header_t *)low;
    e[n++] = (header_t *)top;
  }
  count_segments(counts_of(d)->packed, p, e, n);
  y->walked = low;
  y->nbound = 0;
}

/* The trigger one segment below the lowest boundary (or `walked`), or
 * none if that lies below the minor heap (the collection counts the
 * rest). */
static void set_trigger(caml_domain_state *d,
                        struct caml_memprof_points_young *y)
{
  uintnat last = (uintnat)(y->nbound ? y->bound[y->nbound - 1] : y->walked);
  uintnat t = last - SEGMENT_BYTES;
  y->trigger = last > SEGMENT_BYTES
               && t > (uintnat)d->young_start ? (value *)t : NULL;
}

/* Packed counts x, unpacked into `into`. */
static void add_packed(pair *into, uint64_t x)
{
  uint64_t blocks = x >> PACK_SHIFT;
  into->blocks += blocks;
  into->words += (x & (PACK_ONE - 1)) + blocks;
}

/* Move the packed counts of `id` to its pair; pages of ids never
 * counted are only read. */
static void settle_id(uint64_t *packed, pair *into, uintnat id)
{
  uint64_t x = packed[id];
  if (x == 0) return;
  add_packed(&into[id], x);
  packed[id] = 0;
}

/* Add the packed counts `packed` to their pairs `into`. */
static void settle(uint64_t *packed, pair *into)
{
  caml_plat_lock_blocking(&tables_lock);
  uintnat n = next_id;
  caml_plat_unlock(&tables_lock);
  for (uintnat id = 0; id < n; id++) settle_id(packed, into, id);
  settle_id(packed, into, CAML_POINT_UNREGISTERED);
}

void caml_memprof_points_minor_heap_reset(caml_domain_state *d)
{
  struct caml_memprof_points_young *y = &caml_memprof_points_young[d->id];
  y->walked = d->young_end;
  y->nbound = 0;
  y->trigger = NULL;
  if (caml_memprof_points_on) {
    struct domain_counts *c = counts_of(d);
    uint64_t words = d->young_end - d->young_start;
    if (c->packed_words + words > PACK_ROOM) {
      settle(c->packed, c->minor);
      c->packed_words = 0;
    }
    c->packed_words += words;
    set_trigger(d, y);
  }
}

/* `done` is the allocation pointer with no allocation pending, above
 * which every block is headered: a boundary between blocks. Keep it, or
 * with SEGMENTS - 1 kept already count the chunk [done, walked). */
static void at_boundary(caml_domain_state *d, value *done)
{
  struct caml_memprof_points_young *y = &caml_memprof_points_young[d->id];
  value *last = y->nbound ? y->bound[y->nbound - 1] : y->walked;
  CAMLassert(done <= last);
  if (done < last) {
    if (y->nbound == CAML_POINTS_SEGMENTS - 1) {
      count_below_walked(d, y, done);
    } else {
      y->bound[y->nbound++] = done;
    }
  }
  set_trigger(d, y);
}

/* Set the allocation limit again now that the trigger moved, unless an
 * interrupt raised it (the caller's usual path then serves that and
 * resets the limit). True if the pending allocation now passes it. */
static bool refresh_limit(caml_domain_state *d)
{
  uintnat old = atomic_load_relaxed(&d->young_limit);
  if (old == CAML_UINTNAT_MAX) return false;
  uintnat limit = caml_young_limit_of_triggers(d);
  if (!atomic_compare_exchange_strong(&d->young_limit, &old, limit))
    return false;
  return (uintnat)d->young_ptr >= limit;
}

/* caml_alloc_small_dispatch, first thing, when the allocation of
 * `whsize` words (made, not yet headered) fell below the trigger. True
 * if nothing else asked for the slow path: the allocation stands. */
bool caml_memprof_points_alloc_chunk(caml_domain_state *d, uintnat whsize)
{
  at_boundary(d, d->young_ptr + whsize);
  return refresh_limit(d);
}

/* caml_memprof_points_after_alloc, when the allocation made again lies
 * below the trigger. */
void caml_memprof_points_after_alloc_below(caml_domain_state *d,
                                           uintnat whsize)
{
  at_boundary(d, d->young_ptr + whsize);
  (void)refresh_limit(d);
}

/* At the start of a minor collection: the rest, [young_ptr, walked). */
void caml_memprof_points_count_minor(caml_domain_state *d)
{
  count_below_walked(d, &caml_memprof_points_young[d->id], d->young_ptr);
}

void caml_memprof_points_promoted_end(caml_domain_state *d,
                                      uintnat major_words)
{
  struct domain_counts *c = counts_of(d);
  c->promoted_words += major_words;
  if (c->promoted_words > PACK_ROOM) {
    settle(c->packed_promoted, c->promoted);
    c->promoted_words = 0;
  }
}

void caml_memprof_points_count_major(caml_domain_state *d, header_t hd)
{
  pair *c = &counts_of(d)->major[Reserved_hd(hd)];
  c->blocks++;
  c->words += Whsize_hd(hd);
}

void caml_memprof_points_count_live(header_t hd)
{
  pair *c = &live[Reserved_hd(hd)];
  c->blocks++;
  c->words += Whsize_hd(hd);
}

void caml_memprof_points_live_begin(void)
{
  if (!caml_memprof_points_on) return;
  live_missing = NULL;
  memset(live, 0, next_id * sizeof *live);
  live[CAML_POINT_UNREGISTERED] = (pair){ 0, 0 };
  caml_memprof_points_live_on = true;
}

void caml_memprof_points_live_end(const char *missing)
{
  caml_memprof_points_live_on = false;
  live_missing = missing;
}

/**** The profile's section ****/

enum { MINOR, MAJOR, PROMOTED, LIVE, KINDS };

/* The sums over domains for `id`; false when all are zero. */
static bool sum_id(uintnat id, pair out[KINDS])
{
  memset(out, 0, KINDS * sizeof *out);
  for (int i = 0, n = atomic_load(&slots_used); i < n; i++) {
    const struct domain_counts *c = &per_domain[i];
    if (c->minor == NULL) continue;
    const pair *src[3] = { c->minor, c->major, c->promoted };
    for (int k = 0; k < 3; k++) {
      out[k].blocks += src[k][id].blocks;
      out[k].words += src[k][id].words;
    }
    add_packed(&out[MINOR], c->packed[id]);
    add_packed(&out[PROMOTED], c->packed_promoted[id]);
  }
  if (live_missing == NULL) out[LIVE] = live[id];
  for (int k = 0; k < KINDS; k++) if (out[k].blocks) return true;
  return false;
}

static void render_counts(struct caml_memprof_buf *b, const pair c[KINDS])
{
  int kinds = live_missing == NULL ? KINDS : LIVE;
  for (int k = 0; k < kinds; k++) {
    caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_uint(b, c[k].blocks);
    caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_uint(b, c[k].words);
  }
  if (live_missing == NULL) caml_memprof_buf_lit(b, "]");
  else caml_memprof_buf_lit(b, ",null,null]");
}

/* A table entry "file\tfn line,start,end", as the compiler of the same
 * patch writes it (selectgen.ml): the file up to the first tab, the
 * function up to the last space, then the three numbers in decimal. */
struct entry { const char *file, *fn, *nums; size_t file_len, fn_len; };

static void entry_at(const char *e, struct entry *out)
{
  const char *tab = strchr(e, '\t');
  const char *space = strrchr(tab, ' ');
  out->file = e;
  out->file_len = tab - e;
  out->fn = tab + 1;
  out->fn_len = space - (tab + 1);
  out->nums = space + 1;
}

static bool render_points(struct caml_memprof_buf *b)
{
  static const struct { uintnat id; const char *name; } pseudo[] = {
    { CAML_POINT_RUNTIME, "(runtime)" },
    { CAML_POINT_UNMARSHAL, "(unmarshal)" },
    { CAML_POINT_DUP, "(Obj.dup)" },
    { CAML_POINT_UNREGISTERED, "(unregistered)" },
  };
  pair c[KINDS];
  bool first = true;
  for (size_t i = 0; i < sizeof pseudo / sizeof pseudo[0]; i++) {
    if (!sum_id(pseudo[i].id, c)) continue;
    if (!first) caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_lit(b, "\n[\"\",0,0,0,");
    first = false;
    caml_memprof_buf_json_string(b, pseudo[i].name);
    render_counts(b, c);
  }
  for (size_t t = 0; t < ntables; t++) {
    const char *e = table_entries(tables[t].t);
    for (uintnat i = 0; i < tables[t].t->count; i++) {
      const char *here = e;
      e += strlen(e) + 1;
      if (!sum_id(tables[t].first + i, c)) continue;
      struct entry en;
      entry_at(here, &en);
      if (!first) caml_memprof_buf_lit(b, ",");
      caml_memprof_buf_lit(b, "\n[");
      first = false;
      caml_memprof_buf_json_string_n(b, en.file, en.file_len);
      /* line,start,end: digits and commas, as JSON wants them */
      caml_memprof_buf_lit(b, ",");
      caml_memprof_buf_add(b, en.nums, strlen(en.nums));
      caml_memprof_buf_lit(b, ",");
      caml_memprof_buf_json_string_n(b, en.fn, en.fn_len);
      render_counts(b, c);
    }
  }
  return b->err == 0;
}

/* The call points with any count, in id order (design 6). */
static bool render_calls(struct caml_memprof_buf *b)
{
  pair c[KINDS];
  bool first = true;
  caml_plat_lock_blocking(&tables_lock);
  for (size_t i = 0; i < ncalls; i++) {
    struct caml_loc_info li;
    if (!sum_id(call_points[i].id, c) || !call_location(call_points[i].d, &li))
      continue;
    if (!first) caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_lit(b, "\n[");
    first = false;
    caml_memprof_buf_json_string(b, li.loc_filename);
    caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_int(b, li.loc_start_lnum);
    caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_int(b, li.loc_start_chr);
    caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_int(b, li.loc_end_chr);
    caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_json_string(b, li.loc_defname);
    render_counts(b, c);
  }
  caml_plat_unlock(&tables_lock);
  return b->err == 0;
}

bool caml_memprof_points_render(struct caml_memprof_buf *b)
{
  if (!caml_memprof_points_on) return true;
  caml_memprof_buf_lit(b, ",\n\"points\":{\"live\":");
  if (live_missing == NULL) caml_memprof_buf_lit(b, "true");
  else caml_memprof_buf_json_string(b, live_missing);
  caml_memprof_buf_printf(b, ",\"complete\":%s,\"points\":[",
                          exhausted ? "false" : "true");
  if (!render_points(b)) return false;
  caml_memprof_buf_lit(b, "\n],\"calls\":[");
  if (!render_calls(b)) return false;
  caml_memprof_buf_lit(b, "\n]}");
  return b->err == 0;
}

#else /* bytecode, no reserved header bits, or Windows */

static bool requested = false;

void caml_memprof_points_start(void) { requested = true; }
void caml_memprof_points_register(void *table) { (void)table; }
struct caml_memprof_points_young caml_memprof_points_young[Max_domains_max];
uint64_t *caml_memprof_points_promoted_counts[Max_domains_max];

void caml_memprof_points_count_minor(caml_domain_state *d) { (void)d; }
void caml_memprof_points_promoted_end(caml_domain_state *d,
                                      uintnat major_words)
{ (void)d; (void)major_words; }
void caml_memprof_points_minor_heap_reset(caml_domain_state *d) { (void)d; }
bool caml_memprof_points_alloc_chunk(caml_domain_state *d, uintnat whsize)
{ (void)d; (void)whsize; return false; }
void caml_memprof_points_after_alloc_below(caml_domain_state *d,
                                           uintnat whsize)
{ (void)d; (void)whsize; }
void caml_memprof_points_count_major(caml_domain_state *d, header_t hd)
{ (void)d; (void)hd; }
void caml_memprof_points_count_live(header_t hd) { (void)hd; }
void caml_memprof_points_live_begin(void) { }
void caml_memprof_points_live_end(const char *missing) { (void)missing; }
reserved_t caml_memprof_points_c_caller(void) { return 0; }

bool caml_memprof_points_render(struct caml_memprof_buf *b)
{
  if (!requested) return true;
  caml_memprof_buf_lit(b, ",\n\"points\":{\"live\":null,\"complete\":false,"
                       "\"unavailable\":\"no allocation points in this "
                       "runtime (bytecode)\",\"points\":[]}");
  return b->err == 0;
}

#endif
