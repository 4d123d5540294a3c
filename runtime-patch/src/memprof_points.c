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
 *    reserved bits of each header word. A table of n points gets the n
 *    ids after the last table's, above the pseudo ids, so the ids in use
 *    are dense and two units' ids never meet. Registering also gives
 *    each header word a counter of its own (design 4). A table never
 *    registered keeps its words, so its blocks carry
 *    CAML_POINT_UNREGISTERED: a native toplevel phrase, a unit past the
 *    id or counter space, or any unit while counting is off
 *    (registering is then skipped, and nothing reads the bits).
 * 2. Blocks that no OCaml allocation point made. Unmarshalled blocks
 *    carry CAML_POINT_UNMARSHAL (intern.c), as does the unused rest of
 *    the minor-heap block a message that failed part way was read into
 *    (one header over it), and copies CAML_POINT_DUP (Obj.dup and
 *    Obj.with_tag, obj.c, which also serve {r with ...} on large
 *    records). Every other block the runtime allocates (C primitives:
 *    caml_alloc_string, caml_copy_double, caml_make_vect, custom
 *    blocks, ...; a native allocation too large for the minor heap,
 *    caml_alloc_shr_check_gc) carries the id of the OCaml call that is
 *    running the C code, a "call point" (design 6), or
 *    CAML_POINT_RUNTIME when there is none with a source location. All
 *    of bytecode's blocks are CAML_POINT_RUNTIME: its interpreter builds
 *    them at run time with no table of points.
 * 3. Counting, on per-domain arrays indexed by id (or by counter, for
 *    native code's allocations), each mapped once for the whole space
 *    (pages are touched only where ids are used), so no array ever
 *    moves and no registration has to grow one; a later domain in the
 *    same slot adds to the same arrays. Nothing is allocated on the
 *    OCaml heap and no collection is moved.
 *    - Minor, from native code: each allocation adds one to its header
 *      word's counter (design 4).
 *    - Minor, from the runtime: each block, once made (Alloc_small,
 *      memory.h; intern.c; obj.c), adds itself to its id's pair. The
 *      main domain's minor heap holds what the runtime allocated before
 *      counting started: `start` counts it block by block.
 *    - Major: caml_alloc_shr and its variants, and unmarshalling's own
 *      major allocation.
 *    - Promoted: in oldify, by the domain whose update of the young
 *      header succeeds, so a block two domains race for counts once,
 *      into one packed word per id (`promoted_end` after the domain's
 *      part of each collection adds them up now and then).
 *    - Live at exit: each block the exit's walk of reachability enters
 *      (memprof_reach.c, or memprof_snapshot.c's walk), counted afresh
 *      by each walk (`live_begin`); without a completed walk the profile
 *      says why live is not given.
 *    So the points' minor words are the minor heap's words allocated
 *    since counting started, as `gc.minor_words` counts them.
 * 4. The counters of native allocations. Beside each header word the
 *    unit's table has a slot word: the byte offset of the word's counter
 *    in a domain's array of counters, which the domain state's
 *    `points_slots` points to. Each allocation of native code, right
 *    after it stores its header, adds one to the counter at that offset
 *    (three instructions on amd64: two loads and an add to memory;
 *    selectgen.ml); the allocation is then made, so an allocation that
 *    memprof's callbacks cancel never counts. Every block behind one
 *    header word has the same point and size, so the profile's counts
 *    are each counter times its header's size, added up by id
 *    (`minor_of`). Registering gives a table's words counters
 *    [first, first + m) after all earlier tables'; until then a slot
 *    word holds the block's size in words, header included (1 to
 *    Max_young_whsize), so an unregistered unit's blocks count by size,
 *    under CAML_POINT_UNREGISTERED, and the first counters of the array
 *    are reserved for them. With counting off, `points_slots` points to
 *    a small per-domain array that nothing reads, so native code counts
 *    into it at the same cost and the results are never seen.
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
 *    CAML_POINT_RUNTIME, which is the right answer for 0. The id
 *    depends only on the return address, so
 *    every block a call allocates in C counts at its call point however
 *    deep in C it is made, and a program's runs that allocate alike
 *    number their call points alike.
 * 7. Reading the counts. Every array above is mapped for the whole id
 *    space and written only where ids count, and the profile reads each
 *    id of each array once, at exit. A page never written holds zeros
 *    and is not read (mincore says whether it is in memory): on a
 *    kernel without a shared zero page, reading it would give it a page
 *    of its own, and the sums at exit would make every array resident.
 *    The counts of minor allocations by native code are turned into
 *    counts by id one table at a time, into a buffer the size of the
 *    largest table, so no array of all ids is written either.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/mman.h>
#include <unistd.h>
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
struct caml_memprof_points_pair *caml_memprof_points_live_counts = NULL;

#if HEADER_RESERVED_BITS > 0 && defined(NATIVE_CODE) && !defined(_WIN32)

#define N_IDS ((uintnat)1 << HEADER_RESERVED_BITS)

/* A unit's table, as selectgen.ml lays it out. */
struct points_table {
  uintnat base;                 /* Hd_reserved(first id), or all ones */
  uintnat count;                /* points */
  uintnat nheaders;             /* header words */
  header_t headers[];  /* nheaders words, then nheaders slot words (design
                          4), then uint32_t index[nheaders], then count of
                          "file\tfn line,start,end\0" */
};

static uintnat *table_slots(struct points_table *t)
{
  return (uintnat *)(t->headers + t->nheaders);
}

static uint32_t *table_index(struct points_table *t)
{
  return (uint32_t *)(table_slots(t) + t->nheaders);
}

static const char *table_entries(struct points_table *t)
{
  return (const char *)(table_index(t) + t->nheaders);
}

/* A registered table: its first id and its first counter. */
struct registered { struct points_table *t; uintnat first, slot_first; };

static caml_plat_mutex tables_lock = CAML_PLAT_MUTEX_INITIALIZER;
static struct registered *tables = NULL;        /* under tables_lock */
static size_t ntables = 0, tables_cap = 0;
static uintnat next_id = CAML_POINT_FIRST;      /* under tables_lock */
static bool exhausted = false;

/* Design 4: counters per domain, the first SLOT_FIRST of them for the
 * blocks of unregistered units by size. */
#define N_SLOTS ((uintnat)1 << 20)
#define SLOT_FIRST 512
#define MAX_YOUNG_WHSIZE Whsize_wosize(Max_young_wosize)
static uintnat next_slot = SLOT_FIRST;          /* under tables_lock */

/* With counting off: what native code counts into, per domain slot. */
static uint64_t off_slots[Max_domains_max][MAX_YOUNG_WHSIZE + 1];

/* A point's counts (memprof_points.h). */
typedef struct caml_memprof_points_pair pair;

/* Promotions are packed, one word per id, in `packed_promoted`: each
 * adds PACK_ONE + wosize, the blocks above PACK_SHIFT and the sum of
 * their fields below. What a domain promotes in one collection is at
 * most the words it allocates in the major heap during it, which it adds
 * up after each (`promoted_words`), and it settles them into `promoted`
 * once that passes PACK_ROOM. Each block has a header and a field at
 * least, so their sums stay in their bits while no collection promotes
 * 2^33 - 2^26 words (64 GiB). */
#define PACK_SHIFT CAML_POINTS_PACK_SHIFT
#define PACK_ONE CAML_POINTS_PACK_ONE
#define PACK_ROOM ((uint64_t)1 << 26)

struct domain_counts {
  pair *minor, *major, *promoted;   /* minor: the runtime's blocks */
  uint64_t *slots;                  /* native code's blocks (design 4) */
  uint64_t *packed_promoted;
  uint64_t promoted_words;   /* a bound on the words packed in promotions */
};
static struct domain_counts per_domain[Max_domains_max];
static _Atomic int slots_used = 0;        /* 1 + the highest slot with counts */
static pair *live = NULL;
static bool live_written = false;    /* a walk has counted into `live` */
static const char *live_missing = "no walk of the heap at exit";

uint64_t *caml_memprof_points_promoted_counts[Max_domains_max];

static void *id_map(size_t entries, size_t entry)
{
  void *p = mmap(NULL, entries * entry, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) caml_fatal_error("memprof-ci: out of memory for the "
                                        "allocation points' counters");
  return p;
}

static pair *id_array(void) { return id_map(N_IDS, sizeof(pair)); }

/* The domain's arrays, created by its first count of any kind. Only the
 * domain itself counts into them (a block it promotes from another
 * domain's heap counts in its own arrays), so creating them needs no
 * lock; slots_used is raised atomically, for the profile's sums. */
static Caml_noinline void counts_create(caml_domain_state *d,
                                         struct domain_counts *c)
{
  c->major = id_array();
  c->promoted = id_array();
  c->slots = id_map(N_SLOTS, sizeof(uint64_t));
  c->packed_promoted = id_map(N_IDS, sizeof(uint64_t));
  caml_memprof_points_promoted_counts[d->id] = c->packed_promoted;
  c->minor = id_array();
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
  caml_plat_lock_blocking(&tables_lock);
  uintnat base = next_id;
  bool room = base + t->count <= CAML_POINT_UNREGISTERED
              && next_slot + t->nheaders <= N_SLOTS;
  if (room && ntables == tables_cap) {
    size_t cap = tables_cap ? 2 * tables_cap : 256;
    struct registered *grown = realloc(tables, cap * sizeof *grown);
    if (grown == NULL) room = false;
    else { tables = grown; tables_cap = cap; }
  }
  if (room) {
    tables[ntables++] = (struct registered){ t, base, next_slot };
    next_id = base + t->count;
    t->base = Hd_reserved(base);
    /* Each allocation loads its header and its counter's offset from
     * the table: give it its id and a counter. */
    const uint32_t *index = table_index(t);
    uintnat *slots = table_slots(t);
    for (uintnat j = 0; j < t->nheaders; j++) {
      t->headers[j] = (t->headers[j] & ~Hd_reserved(CAML_POINT_UNREGISTERED))
                      | Hd_reserved(base + index[j]);
      slots[j] = (next_slot + j) * sizeof(uint64_t);
    }
    next_slot += t->nheaders;
  } else {
    exhausted = true;
  }
  caml_plat_unlock(&tables_lock);
}

/* A block the runtime made in the minor heap. */
static void count_young(caml_domain_state *d, header_t hd)
{
  pair *c = &counts_of(d)->minor[Reserved_hd(hd)];
  c->blocks++;
  c->words += Whsize_hd(hd);
}

void caml_memprof_points_count_young(header_t hd)
{
  count_young(Caml_state, hd);
}

void caml_memprof_points_domain_counters(caml_domain_state *d)
{
  d->points_slots = caml_memprof_points_on ? counts_of(d)->slots
                                           : off_slots[d->id];
}

extern void *caml_alloc_sites[];

void caml_memprof_points_start(void)
{
  caml_domain_state *d = Caml_state;
  caml_memprof_points_on = true;
  live = id_array();
  counts_of(d);
  for (void **t = caml_alloc_sites; *t != NULL; t++) {
    caml_memprof_points_register(*t);
  }
  caml_memprof_points_domain_counters(d);
  /* The main domain's minor heap holds what the runtime allocated
   * before: headered blocks from young_ptr up, counted like the rest. */
  for (value *p = d->young_ptr; p < d->young_end; p += Whsize_hd(*p)) {
    count_young(d, (header_t)*p);
  }
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

/**** Sums ****/

/* Design 7: whether the page holding `p`, in one of the arrays above,
 * was ever touched; the answers for the last pages asked are kept, per
 * thread (domains settle their own counts), until `touched_forget`, in
 * a table indexed by a hash of the page's number. The sums read several
 * arrays side by side, id by id, and the arrays are mapped at addresses
 * whose page numbers agree in their low bits, so a table indexed by
 * those bits would have each array evict the others' pages and ask the
 * kernel again at every id. When it cannot be known the page is read. */
#define TOUCHED_CACHE_BITS 6
#define TOUCHED_CACHE (1 << TOUCHED_CACHE_BITS)
static CAMLthread_local uintptr_t touched_pages[TOUCHED_CACHE];
static CAMLthread_local bool touched_answers[TOUCHED_CACHE];

static void touched_forget(void)
{
  memset(touched_pages, 0, sizeof touched_pages);
}

static bool touched(const void *p)
{
  static uintptr_t page_size = 0;
  if (page_size == 0) page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t page = (uintptr_t)p & ~(page_size - 1);
  size_t k = (size_t)(((uint64_t)(page / page_size) * UINT64_C(0x9E3779B97F4A7C15))
                      >> (64 - TOUCHED_CACHE_BITS));
  if (touched_pages[k] != page) {
    unsigned char v = 1;
    if (mincore((void *)page, page_size, &v) != 0) v = 1;
    touched_pages[k] = page;
    touched_answers[k] = v & 1;
  }
  return touched_answers[k];
}

static pair read_pair(const pair *p)
{
  return touched(p) ? *p : (pair){ 0, 0 };
}

static uint64_t read_u64(const uint64_t *p)
{
  return touched(p) ? *p : 0;
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
  uint64_t x = read_u64(&packed[id]);
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
  touched_forget();
  for (uintnat id = 0; id < n; id++) settle_id(packed, into, id);
  settle_id(packed, into, CAML_POINT_UNREGISTERED);
}

static void add_blocks(pair *into, uint64_t blocks, uintnat whsize)
{
  into->blocks += blocks;
  into->words += blocks * whsize;
}

/* The minor counts of the n ids from `first`, summed over domains into
 * `out`: the runtime's pairs, and for a registered table `r`, native
 * code's counters times their headers' sizes (design 4); for
 * CAML_POINT_UNREGISTERED, the counters by size. Computed for each
 * table in turn at render time, so no array of all ids is written.
 * With tables_lock held. */
static void minor_of(uintnat first, uintnat n, const struct registered *r,
                     pair *out)
{
  memset(out, 0, n * sizeof *out);
  for (int i = 0, used = atomic_load(&slots_used); i < used; i++) {
    const struct domain_counts *c = &per_domain[i];
    if (c->minor == NULL) continue;
    for (uintnat k = 0; k < n; k++) {
      pair m = read_pair(&c->minor[first + k]);
      out[k].blocks += m.blocks;
      out[k].words += m.words;
    }
    if (first == CAML_POINT_UNREGISTERED) {
      for (uintnat size = 1; size <= MAX_YOUNG_WHSIZE; size++) {
        add_blocks(out, read_u64(&c->slots[size]), size);
      }
    }
    if (r == NULL) continue;
    const struct points_table *t = r->t;
    const uint32_t *index = table_index((struct points_table *)t);
    const uint64_t *counters = c->slots + r->slot_first;
    for (uintnat j = 0; j < t->nheaders; j++) {
      uint64_t n_j = read_u64(&counters[j]);
      if (n_j == 0) continue;
      add_blocks(&out[index[j]], n_j, Whsize_hd(t->headers[j]));
    }
  }
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

void caml_memprof_points_live_begin(void)
{
  if (!caml_memprof_points_on) return;
  live_missing = NULL;
  if (live_written) {            /* a fresh array's pages stay untouched */
    memset(live, 0, next_id * sizeof *live);
    live[CAML_POINT_UNREGISTERED] = (pair){ 0, 0 };
  }
  live_written = true;
  caml_memprof_points_live_counts = live;
}

void caml_memprof_points_live_end(const char *missing)
{
  caml_memprof_points_live_counts = NULL;
  live_missing = missing;
}

/**** The profile's section ****/

enum { MINOR, MAJOR, PROMOTED, LIVE, KINDS };

/* The sums over domains for `id`, its minor ones (`minor_of`) given;
 * false when all are zero. */
static bool sum_id(uintnat id, pair minor, pair out[KINDS])
{
  memset(out, 0, KINDS * sizeof *out);
  for (int i = 0, n = atomic_load(&slots_used); i < n; i++) {
    const struct domain_counts *c = &per_domain[i];
    if (c->minor == NULL) continue;
    pair major = read_pair(&c->major[id]);
    pair promoted = read_pair(&c->promoted[id]);
    out[MAJOR].blocks += major.blocks;
    out[MAJOR].words += major.words;
    out[PROMOTED].blocks += promoted.blocks;
    out[PROMOTED].words += promoted.words;
    add_packed(&out[PROMOTED], read_u64(&c->packed_promoted[id]));
  }
  out[MINOR] = minor;
  if (live_missing == NULL) out[LIVE] = read_pair(&live[id]);
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
  pair c[KINDS], minor;
  bool first = true;
  for (size_t i = 0; i < sizeof pseudo / sizeof pseudo[0]; i++) {
    caml_plat_lock_blocking(&tables_lock);
    minor_of(pseudo[i].id, 1, NULL, &minor);
    caml_plat_unlock(&tables_lock);
    if (!sum_id(pseudo[i].id, minor, c)) continue;
    if (!first) caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_lit(b, "\n[\"\",0,0,0,");
    first = false;
    caml_memprof_buf_json_string(b, pseudo[i].name);
    render_counts(b, c);
  }
  /* One table's minor counts at a time, in a buffer for the largest. */
  uintnat most = 0;
  for (size_t t = 0; t < ntables; t++)
    if (tables[t].t->count > most) most = tables[t].t->count;
  pair *minors = malloc((most ? most : 1) * sizeof *minors);
  if (minors == NULL) { b->err = ENOMEM; return false; }
  for (size_t t = 0; t < ntables; t++) {
    const char *e = table_entries(tables[t].t);
    caml_plat_lock_blocking(&tables_lock);
    minor_of(tables[t].first, tables[t].t->count, &tables[t], minors);
    caml_plat_unlock(&tables_lock);
    for (uintnat i = 0; i < tables[t].t->count; i++) {
      const char *here = e;
      e += strlen(e) + 1;
      if (!sum_id(tables[t].first + i, minors[i], c)) continue;
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
  free(minors);
  return b->err == 0;
}

/* The call points with any count, in id order (design 6). */
static bool render_calls(struct caml_memprof_buf *b)
{
  pair c[KINDS], minor;
  bool first = true;
  caml_plat_lock_blocking(&tables_lock);
  for (size_t i = 0; i < ncalls; i++) {
    struct caml_loc_info li;
    minor_of(call_points[i].id, 1, NULL, &minor);
    if (!sum_id(call_points[i].id, minor, c)
        || !call_location(call_points[i].d, &li))
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
  touched_forget();
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
uint64_t *caml_memprof_points_promoted_counts[Max_domains_max];

void caml_memprof_points_promoted_end(caml_domain_state *d,
                                      uintnat major_words)
{ (void)d; (void)major_words; }
void caml_memprof_points_domain_counters(caml_domain_state *d)
{ (void)d; }
void caml_memprof_points_count_young(header_t hd) { (void)hd; }
void caml_memprof_points_count_major(caml_domain_state *d, header_t hd)
{ (void)d; (void)hd; }
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
