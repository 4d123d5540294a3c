/* memprof-ci: the built-in C tracker of statmemprof.
 *
 * 1. With OCAMLMEMPROF=rate=... the runtime calls
 *    caml_memprof_tracker_start() just before the program's first
 *    module initialiser. It starts a memprof profile whose callbacks
 *    are the C functions below (memprof.c, design 8.3), so no OCaml
 *    code runs and nothing is allocated on the OCaml heap per sample.
 *    New domains and threads inherit the profile.
 * 2. Sites: one record per distinct raw callstack prefix (at most
 *    `frames` slots), found through an open-addressing hash table that
 *    readers probe without a lock (each thread first tries the site
 *    it hit last); only inserting a new stack takes the mutex. Records
 *    are malloc'd and never freed or moved, so the Val_ptr(site) that
 *    memprof keeps for each sampled block stays valid until exit.
 * 3. Counters are relaxed atomics: `alloc` runs on any domain, and
 *    `promote`/`dealloc` run inside collections, on every domain in
 *    parallel. Counts are exact sums; nothing is scaled.
 * 4. At exit (caml_memprof_tracker_finish, at most once): stop
 *    sampling, read the GC counters, have the blocks no longer
 *    reachable counted as collected (a walk of the heap,
 *    memprof_reach.c, or else two major cycles), resolve each distinct slot to
 *    source locations once (inlined frames expanded; each distinct
 *    frame object rendered and stored once), merge stacks that resolve
 *    alike, sort them by their frames' ranks (the order of their
 *    texts), and stream the JSON profile
 *    (runtime-patch/format/profile-format.md) where design 5 says. The
 *    program's exit status is kept, except that a profile that cannot
 *    be written turns 0 into 2.
 * 5. Where the profile goes. `out` (with %p expanded) names either an
 *    existing file that is not a regular file once symlinks are
 *    followed (/dev/stdout, a pipe, a terminal), which is written in
 *    place since a rename would replace it; or anything else, and then
 *    the profile is written to a new temporary file beside it and
 *    renamed over it, so the name only ever holds a complete profile.
 *    The temporary file is created with O_CREAT|O_EXCL|O_NOFOLLOW and
 *    mode 0666 less the umask: a name that exists already, such as a
 *    symlink planted to make us overwrite its target, is never opened,
 *    and the next name is tried (`<out>.tmp.<pid>`, then
 *    `<out>.tmp.<pid>.1` ... up to 100 names, then EEXIST). The rename
 *    replaces a symlink at `out` itself, never its target. The in-place
 *    case opens `out` without O_CREAT or O_TRUNC and checks the type on
 *    the open descriptor, so a symlink swapped in after the check,
 *    pointing at a regular file, is closed unwritten and the rename
 *    path taken instead: no regular file is ever written through a
 *    name we did not create.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "caml/alloc.h"
#include "caml/backtrace_prim.h"
#include "caml/camlatomic.h"
#include "caml/domain_state.h"
#include "caml/gc_ctrl.h"
#include "caml/gc_stats.h"
#include "caml/globroots.h"
#include "caml/major_gc.h"
#include "caml/memory.h"
#include "caml/memprof.h"
#include "caml/memprof_env.h"
#include "caml/minor_gc.h"
#include "caml/mlvalues.h"
#include "caml/platform.h"
#include "caml/shared_heap.h"
#include "caml/version.h"

CAMLextern value caml_sys_argv(value unit);

/**** Sites ****/

enum {
  C_BLOCKS, C_SAMPLES, C_WORDS,
  C_MINOR, C_MAJOR, C_MARSHAL, C_CUSTOM,
  C_PROMOTED, C_COLLECTED,
  N_COUNTERS
};

/* `"key":` of each count, in schema order; live_samples (derived) last. */
static const char *const count_keys[N_COUNTERS + 1] = {
  "\"blocks\":", "\"samples\":", "\"words\":",
  "\"minor_samples\":", "\"major_samples\":", "\"marshal_samples\":",
  "\"custom_samples\":", "\"promoted_samples\":",
  "\"collected_samples\":", "\"live_samples\":",
};

struct site {
  atomic_uintnat count[N_COUNTERS];  /* C_SAMPLES is derived at exit */
  uint64_t hash;
  size_t nslots;
  backtrace_slot slots[];
};

/* Open addressing over a power-of-2 capacity, at most half full.
 * Readers probe without the lock: a slot, once filled (release), never
 * changes, and a grown table is published (release) only once it holds
 * every site. A table replaced by a larger one stays allocated, since
 * a reader may still be probing it; a miss there only sends that
 * reader to the locked path. */
struct site_table {
  struct site_table *retired;        /* the smaller table it replaced,
                                        kept reachable for leak checkers */
  size_t capacity;
  _Atomic(struct site *) slot[];
};

static caml_plat_mutex sites_lock = CAML_PLAT_MUTEX_INITIALIZER;
static _Atomic(struct site_table *) sites = NULL;
static size_t sites_count = 0;       /* under sites_lock */

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
static struct site *sites_probe(struct site_table *t, uint64_t h,
                                const backtrace_slot *slots, size_t n,
                                size_t *hole)
{
  size_t mask = t->capacity - 1;
  for (size_t j = h & mask;; j = (j + 1) & mask) {
    struct site *s = atomic_load_explicit(&t->slot[j], memory_order_acquire);
    if (s == NULL) { *hole = j; return NULL; }
    if (s->hash == h && s->nslots == n && same_slots(s->slots, slots, n)) {
      return s;
    }
  }
}

/* A table twice as large (1024 slots at first) holding every site of
 * `old`; NULL if out of memory. */
static struct site_table *sites_grown(struct site_table *old)
{
  size_t cap = old ? 2 * old->capacity : 1024;
  struct site_table *t = calloc(1, sizeof *t + cap * sizeof t->slot[0]);
  if (t == NULL) return NULL;
  t->retired = old;
  t->capacity = cap;
  for (size_t i = 0; old != NULL && i < old->capacity; i++) {
    struct site *s = atomic_load_relaxed(&old->slot[i]);
    if (s == NULL) continue;
    size_t j = s->hash & (cap - 1);
    while (atomic_load_relaxed(&t->slot[j]) != NULL) j = (j + 1) & (cap - 1);
    atomic_store_relaxed(&t->slot[j], s);
  }
  return t;
}

/* The record for this callstack, created if new; NULL if out of
 * memory (the sample is then not recorded). */
static struct site *site_of(const backtrace_slot *slots, size_t n)
{
  uint64_t h = hash_slots(slots, n);
  size_t hole;
  struct site_table *t = atomic_load_explicit(&sites, memory_order_acquire);
  struct site *found = t ? sites_probe(t, h, slots, n, &hole) : NULL;
  if (found != NULL) return found;

  caml_plat_lock_blocking(&sites_lock);
  t = atomic_load_relaxed(&sites);
  if (t == NULL || 2 * (sites_count + 1) > t->capacity) {
    struct site_table *g = sites_grown(t);
    if (g == NULL) goto out;
    atomic_store_explicit(&sites, g, memory_order_release);
    t = g;
  }
  found = sites_probe(t, h, slots, n, &hole);  /* inserted meanwhile? */
  if (found != NULL) goto out;
  found = malloc(sizeof *found + n * sizeof *slots);
  if (found == NULL) goto out;
  for (int c = 0; c < N_COUNTERS; c++) atomic_store_relaxed(&found->count[c], 0);
  found->hash = h;
  found->nslots = n;
  memcpy(found->slots, slots, n * sizeof *slots);
  atomic_store_explicit(&t->slot[hole], found, memory_order_release);
  sites_count++;
 out:
  caml_plat_unlock(&sites_lock);
  return found;
}

Caml_inline void bump(struct site *s, int c, uintnat n)
{
  atomic_fetch_add_explicit(&s->count[c], n, memory_order_relaxed);
}

/**** The tracker's callbacks (called by memprof.c) ****/

static value on_alloc(const struct caml_memprof_c_tracker *t,
                      size_t samples, size_t wosize, int source, bool young,
                      const backtrace_slot *callstack, size_t frames)
{
  (void)t;
  /* Loops sample the same stack again and again: a thread's last site
   * is tried first, which needs neither hash nor probe. */
  static CAMLthread_local struct site *last_site = NULL;
  struct site *s = last_site;
  if (s == NULL || s->nslots != frames
      || !same_slots(s->slots, callstack, frames)) {
    s = site_of(callstack, frames);
    if (s == NULL) return Val_unit;
    last_site = s;
  }
  bump(s, C_BLOCKS, 1);
  if (source == CAML_MEMPROF_SRC_CUSTOM) {
    bump(s, C_WORDS, wosize);            /* out-of-heap words, no header */
    bump(s, C_CUSTOM, samples);
  } else {
    bump(s, C_WORDS, Whsize_wosize(wosize));
    bump(s, young ? C_MINOR : C_MAJOR, samples);
    if (source == CAML_MEMPROF_SRC_MARSHAL) bump(s, C_MARSHAL, samples);
  }
  return Val_ptr(s);
}

static void on_promote(const struct caml_memprof_c_tracker *t,
                       value data, size_t samples)
{
  (void)t;
  bump(Ptr_val(data), C_PROMOTED, samples);
}

static void on_dealloc(const struct caml_memprof_c_tracker *t,
                       value data, size_t samples)
{
  (void)t;
  bump(Ptr_val(data), C_COLLECTED, samples);
}

static const struct caml_memprof_c_tracker tracker = {
  on_alloc, on_promote, on_dealloc
};

/**** Start ****/

static value profile = Val_unit;   /* generational global root */
static char **argv_copy = NULL;
static size_t argc_copy = 0;
static atomic_uintnat finished = 0;

void caml_memprof_tracker_start(void)
{
  const struct caml_memprof_env *env = caml_memprof_env();
  if (!env->tracking) return;

  /* Copy Sys.argv now, while it is as the runtime received it. */
  value argv = caml_sys_argv(Val_unit);
  argc_copy = Wosize_val(argv);
  argv_copy = calloc(argc_copy ? argc_copy : 1, sizeof *argv_copy);
  for (size_t i = 0; argv_copy != NULL && i < argc_copy; i++) {
    argv_copy[i] = strdup(String_val(Field(argv, i)));
  }
  if (argv_copy == NULL) argc_copy = 0;

  caml_register_generational_global_root(&profile);
  caml_modify_generational_global_root(
    &profile, caml_memprof_start_c(env->rate, env->frames, &tracker));
}

/**** Output ****/

/* A growable string; or, with `sink` set, a fixed window onto a file,
 * flushed whenever full, so that a large profile is streamed rather
 * than built whole. `err` is 0, or the errno of the first failure
 * (allocation or write), after which nothing more is added. */
struct buf { char *s; size_t len, cap; int err; FILE *sink; };

#define BUF_INIT { NULL, 0, 0, 0, NULL }
#define OUT_WINDOW ((size_t)1 << 20)

static void buf_flush(struct buf *b)
{
  if (b->err == 0 && b->len > 0 && fwrite(b->s, 1, b->len, b->sink) != b->len) {
    b->err = errno ? errno : EIO;
  }
  b->len = 0;
}

static void buf_add_slow(struct buf *b, const char *s, size_t n)
{
  if (b->err) return;
  if (b->sink != NULL) {
    buf_flush(b);
    if (n + 1 > b->cap) {               /* larger than the window */
      if (fwrite(s, 1, n, b->sink) != n) b->err = errno ? errno : EIO;
      return;
    }
  } else {
    size_t cap = b->cap ? b->cap : 256;
    while (b->len + n + 1 > cap) cap *= 2;
    char *p = realloc(b->s, cap);
    if (p == NULL) { b->err = ENOMEM; return; }
    b->s = p;
    b->cap = cap;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = '\0';
}

/* Inline: a large profile is millions of short pieces. */
Caml_inline void buf_add(struct buf *b, const char *s, size_t n)
{
  if (b->len + n + 1 <= b->cap && b->err == 0) {
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
  } else {
    buf_add_slow(b, s, n);
  }
}

/* Append a string literal; its length is known at compile time. */
#define buf_lit(b, lit) buf_add((b), (lit), sizeof(lit) - 1)

static void buf_printf(struct buf *b, const char *fmt, ...)
{
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) { if (!b->err) b->err = EINVAL; return; }
  buf_add(b, tmp, n);
}

/* Decimal digits without vsnprintf (a profile has ten counters per
 * stack and tens of thousands of stacks at high rates): written at the
 * end of `tmp`, returning where they start. */
#define UINT_DIGITS 24
static char *uint_digits(char tmp[UINT_DIGITS], uintnat v)
{
  char *p = tmp + UINT_DIGITS;
  do { *--p = (char)('0' + v % 10); v /= 10; } while (v != 0);
  return p;
}

static void buf_uint(struct buf *b, uintnat v)
{
  char tmp[UINT_DIGITS];
  char *p = uint_digits(tmp, v);
  buf_add(b, p, tmp + UINT_DIGITS - p);
}

/* `,"key":value` (no comma before the first field of an object). */
static void buf_field(struct buf *b, bool first, const char *key, uintnat v)
{
  if (!first) buf_lit(b, ",");
  buf_lit(b, "\"");
  buf_add(b, key, strlen(key));
  buf_lit(b, "\":");
  buf_uint(b, v);
}

static void buf_json_string(struct buf *b, const char *s)
{
  if (s == NULL) { buf_lit(b, "null"); return; }
  buf_lit(b, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char esc[2] = { '\\', (char)*p };
      buf_add(b, esc, 2);
    } else if (*p < 0x20) {
      buf_printf(b, "\\u%04x", *p);
    } else {
      buf_add(b, (const char *)p, 1);
    }
  }
  buf_lit(b, "\"");
}

/* Frame objects. Each distinct JSON frame object is rendered and stored
 * once ("interned") and known by its id; a raw slot resolves to one or
 * more ids (several when calls were inlined), cached per slot. Stacks
 * are then sequences of ids: sorting and merging compare integers, and
 * the output copies each object's stored text. */

struct frame_obj { char *json; size_t len; uint32_t rank; };
static struct frame_obj *objs = NULL;
static size_t objs_count = 0, objs_cap = 0;
static uint32_t *obj_index = NULL;       /* id + 1, open addressing */
static size_t obj_index_cap = 0;

static uint64_t hash_text(const char *s, size_t n)
{
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001B3ull;
  return h;
}

static void obj_index_insert(uint32_t id)
{
  size_t mask = obj_index_cap - 1;
  size_t j = hash_text(objs[id].json, objs[id].len) & mask;
  while (obj_index[j] != 0) j = (j + 1) & mask;
  obj_index[j] = id + 1;
}

/* The id of this frame object, stored (taking ownership of `json`) if
 * new; -1 if out of memory. */
static int64_t intern(char *json, size_t len)
{
  if (2 * (objs_count + 1) > obj_index_cap) {
    size_t cap = obj_index_cap ? 2 * obj_index_cap : 4096;
    uint32_t *t = calloc(cap, sizeof *t);
    if (t == NULL) { free(json); return -1; }
    free(obj_index);
    obj_index = t;
    obj_index_cap = cap;
    for (size_t i = 0; i < objs_count; i++) obj_index_insert((uint32_t)i);
  }
  size_t mask = obj_index_cap - 1;
  for (size_t j = hash_text(json, len) & mask; obj_index[j] != 0;
       j = (j + 1) & mask) {
    struct frame_obj *o = &objs[obj_index[j] - 1];
    if (o->len == len && memcmp(o->json, json, len) == 0) {
      free(json);
      return obj_index[j] - 1;
    }
  }
  if (objs_count == objs_cap) {
    size_t cap = objs_cap ? 2 * objs_cap : 1024;
    struct frame_obj *t = realloc(objs, cap * sizeof *t);
    if (t == NULL) { free(json); return -1; }
    objs = t;
    objs_cap = cap;
  }
  uint32_t id = (uint32_t)objs_count++;
  objs[id].json = json;
  objs[id].len = len;
  obj_index_insert(id);
  return id;
}

static const char unknown_frame[] =
  "{\"file\":null,\"line\":null,\"col_start\":null,\"col_end\":null,"
  "\"function\":null,\"inlined\":false}";

struct slot_frames { backtrace_slot slot; uint32_t *ids; size_t n; };
static struct slot_frames **slot_cache = NULL;  /* open addressing */
static size_t slot_cache_cap = 0, slot_cache_count = 0;

/* Resolve `slot` into `sf` (ids of its frame objects, innermost first);
 * false if out of memory. */
static bool resolve_slot_uncached(backtrace_slot slot, struct slot_frames *sf)
{
  sf->slot = slot;
  sf->n = 0;
  sf->ids = NULL;
  size_t cap = 0;
  debuginfo d = caml_debuginfo_extract(slot);
  for (bool any = false;; d = caml_debuginfo_next(d)) {
    struct buf b = BUF_INIT;
    if (d != NULL) {
      struct caml_loc_info li;
      memset(&li, 0, sizeof li);
      caml_debuginfo_location(d, &li);
      if (!li.loc_valid) continue;
      buf_lit(&b, "{\"file\":");
      buf_json_string(&b, li.loc_filename);
      buf_printf(&b, ",\"line\":%d,\"col_start\":%d,\"col_end\":%d,"
                 "\"function\":", li.loc_start_lnum, li.loc_start_chr,
                 li.loc_end_chr);
      buf_json_string(&b, li.loc_defname);
      buf_printf(&b, ",\"inlined\":%s}", li.loc_is_inlined ? "true" : "false");
    } else if (!any) {
      buf_add(&b, unknown_frame, sizeof unknown_frame - 1);
    } else {
      return true;
    }
    any = true;
    if (b.err) { free(b.s); return false; }
    int64_t id = intern(b.s, b.len);
    if (id < 0) return false;
    if (sf->n == cap) {
      cap = cap ? 2 * cap : 2;
      uint32_t *t = realloc(sf->ids, cap * sizeof *t);
      if (t == NULL) return false;
      sf->ids = t;
    }
    sf->ids[sf->n++] = (uint32_t)id;
    if (d == NULL) return true;
  }
}

static struct slot_frames **slot_cache_find(backtrace_slot slot)
{
  size_t mask = slot_cache_cap - 1;
  size_t j = hash_slots(&slot, 1) & mask;
  while (slot_cache[j] != NULL && slot_cache[j]->slot != slot) {
    j = (j + 1) & mask;
  }
  return &slot_cache[j];
}

/* The resolution of `slot`, cached for good; NULL if out of memory. */
static const struct slot_frames *resolve_slot(backtrace_slot slot)
{
  struct slot_frames **cell = slot_cache_cap ? slot_cache_find(slot) : NULL;
  if (cell != NULL && *cell != NULL) return *cell;
  if (2 * (slot_cache_count + 1) > slot_cache_cap) {
    struct slot_frames **old = slot_cache;
    size_t old_cap = slot_cache_cap;
    size_t cap = old_cap ? 2 * old_cap : 4096;
    slot_cache = calloc(cap, sizeof *slot_cache);
    if (slot_cache == NULL) { slot_cache = old; return NULL; }
    slot_cache_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
      if (old[i] != NULL) *slot_cache_find(old[i]->slot) = old[i];
    }
    free(old);
    cell = slot_cache_find(slot);
  }
  struct slot_frames *sf = malloc(sizeof *sf);
  if (sf == NULL) return NULL;
  if (!resolve_slot_uncached(slot, sf)) {
    free(sf->ids);
    free(sf);
    return NULL;
  }
  *cell = sf;
  slot_cache_count++;
  return sf;
}

/* Sort frame objects by their text; a stack's sequence of ranks then
 * orders stacks exactly as their joined JSON texts would (no frame
 * object's text is a proper prefix of another's). */
static int by_text(const void *a, const void *b)
{
  return strcmp(objs[*(const uint32_t *)a].json, objs[*(const uint32_t *)b].json);
}

/* Set each frame object's rank; returns the ids in rank order (NULL
 * if out of memory). */
static uint32_t *rank_objects(void)
{
  uint32_t *by_rank = malloc((objs_count ? objs_count : 1) * sizeof *by_rank);
  if (by_rank == NULL) return NULL;
  for (size_t i = 0; i < objs_count; i++) by_rank[i] = (uint32_t)i;
  qsort(by_rank, objs_count, sizeof *by_rank, by_text);
  for (size_t r = 0; r < objs_count; r++) objs[by_rank[r]].rank = (uint32_t)r;
  return by_rank;
}

struct resolved { uint32_t *ranks; size_t n; uintnat count[N_COUNTERS]; };

static int by_frames(const void *a, const void *b)
{
  const struct resolved *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  for (size_t i = 0; i < n; i++) {
    if (x->ranks[i] != y->ranks[i]) return x->ranks[i] < y->ranks[i] ? -1 : 1;
  }
  return x->n < y->n ? -1 : x->n > y->n;
}

/* The counts of one stack as `"key":n,...`, assembled in a local line
 * and added at once (one stack per sample at worst). */
static void add_counts(struct buf *b, const uintnat *count)
{
  char line[512];
  char *p = line;
  for (int c = 0; c <= N_COUNTERS; c++) {
    uintnat v = c < N_COUNTERS ? count[c]
      : count[C_SAMPLES] >= count[C_COLLECTED]
        ? count[C_SAMPLES] - count[C_COLLECTED] : 0;
    if (c) *p++ = ',';
    size_t k = strlen(count_keys[c]);
    memcpy(p, count_keys[c], k);
    p += k;
    char digits[UINT_DIGITS];
    char *d = uint_digits(digits, v);
    memcpy(p, d, digits + UINT_DIGITS - d);
    p += digits + UINT_DIGITS - d;
  }
  buf_add(b, line, p - line);
}

struct gc_totals {
  uintnat minor_words, promoted_words, major_words,
          minor_collections, major_collections, compactions;
};

/* Exact for this domain and for terminated ones; other running domains
 * count as of their last collection (cf. caml_do_exit in sys.c). */
static struct gc_totals read_gc_totals(void)
{
  struct gc_stats s;
  caml_compute_gc_stats(&s);
  struct gc_totals g;
  g.minor_words = s.alloc_stats.minor_words
    + (uintnat)(Caml_state->young_end - Caml_state->young_ptr);
  g.promoted_words = s.alloc_stats.promoted_words;
  g.major_words = s.alloc_stats.major_words + Caml_state->allocated_words;
  g.minor_collections = atomic_load(&caml_minor_collections_count);
  g.major_collections = caml_major_cycles_completed;
  g.compactions = atomic_load(&caml_compactions_count);
  return g;
}

/* The stacks, resolved, sorted and merged: `*n` of them, or NULL when
 * out of memory. Rank arrays live in `*arena` (one allocation);
 * `*by_rank` maps each rank back to its frame object. */
static struct resolved *resolve_stacks(size_t *n_out, uint32_t **arena,
                                       uint32_t **by_rank)
{
  /* Snapshot the table: a still-running domain may insert meanwhile. */
  caml_plat_lock_blocking(&sites_lock);
  struct site_table *t = atomic_load_relaxed(&sites);
  size_t n = 0;
  struct site **ss = calloc(sites_count ? sites_count : 1, sizeof *ss);
  struct resolved *rs = calloc(sites_count ? sites_count : 1, sizeof *rs);
  for (size_t i = 0; ss != NULL && rs != NULL && t != NULL
         && i < t->capacity; i++) {
    struct site *s = atomic_load_relaxed(&t->slot[i]);
    if (s == NULL) continue;
    for (int c = 0; c < N_COUNTERS; c++) {
      rs[n].count[c] = atomic_load_relaxed(&s->count[c]);
    }
    rs[n].count[C_SAMPLES] =
      rs[n].count[C_MINOR] + rs[n].count[C_MAJOR] + rs[n].count[C_CUSTOM];
    ss[n++] = s;
  }
  caml_plat_unlock(&sites_lock);

  /* Resolve outside the lock; frame objects are ranked once all are known. */
  size_t nslots = 0, total = 0;
  bool ok = ss != NULL && rs != NULL;
  for (size_t i = 0; ok && i < n; i++) nslots += ss[i]->nslots;
  const struct slot_frames **sfs =
    ok ? malloc((nslots ? nslots : 1) * sizeof *sfs) : NULL;
  if (sfs == NULL) ok = false;
  for (size_t i = 0, at = 0; ok && i < n; i++) {
    for (size_t k = 0; ok && k < ss[i]->nslots; k++, at++) {
      sfs[at] = resolve_slot(ss[i]->slots[k]);
      if (sfs[at] == NULL) ok = false; else total += sfs[at]->n;
    }
  }
  *by_rank = ok ? rank_objects() : NULL;
  *arena = ok ? malloc((total ? total : 1) * sizeof **arena) : NULL;
  if (*by_rank == NULL || *arena == NULL) ok = false;
  uint32_t *next = *arena;
  for (size_t i = 0, at = 0; ok && i < n; i++) {
    rs[i].ranks = next;
    for (size_t k = 0; k < ss[i]->nslots; k++, at++) {
      const struct slot_frames *sf = sfs[at];
      for (size_t f = 0; f < sf->n; f++) *next++ = objs[sf->ids[f]].rank;
    }
    rs[i].n = next - rs[i].ranks;
  }
  free(sfs);
  free(ss);
  if (!ok) {
    free(rs);
    free(*arena);
    free(*by_rank);
    *arena = *by_rank = NULL;
    return NULL;
  }

  qsort(rs, n, sizeof *rs, by_frames);
  /* Merge stacks whose slots differ but resolve to the same frames. */
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m > 0 && by_frames(&rs[m - 1], &rs[i]) == 0) {
      for (int c = 0; c < N_COUNTERS; c++) rs[m - 1].count[c] += rs[i].count[c];
    } else {
      rs[m++] = rs[i];
    }
  }
  *n_out = m;
  return rs;
}

/* Render the profile into `b`; false when out of memory. */
static bool render(struct buf *b, const struct gc_totals *g)
{
  const struct caml_memprof_env *env = caml_memprof_env();
  size_t n;
  uint32_t *arena, *by_rank;
  struct resolved *rs = resolve_stacks(&n, &arena, &by_rank);
  if (rs == NULL) return false;

  uintnat total[N_COUNTERS] = { 0 };
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < N_COUNTERS; c++) total[c] += rs[i].count[c];

  buf_lit(b, "{\"format\":\"memprof-ci/profile\",\"version\":1,"
          "\"ocaml_version\":");
  buf_json_string(b, OCAML_VERSION_STRING);
#ifdef NATIVE_CODE
  buf_lit(b, ",\"backend\":\"native\",\"argv\":[");
#else
  buf_lit(b, ",\"backend\":\"bytecode\",\"argv\":[");
#endif
  for (size_t i = 0; i < argc_copy; i++) {
    if (i) buf_lit(b, ",");
    buf_json_string(b, argv_copy[i]);
  }
  buf_printf(b, "],\n\"config\":{\"rate\":%.17g,\"seed\":", env->rate);
  if (env->seeded) buf_printf(b, "%llu", (unsigned long long)env->seed);
  else buf_lit(b, "null");
  buf_printf(b, ",\"frames\":%ld},\n", (long)env->frames);
  buf_lit(b, "\"gc\":{");
  buf_field(b, true, "minor_words", g->minor_words);
  buf_field(b, false, "promoted_words", g->promoted_words);
  buf_field(b, false, "major_words", g->major_words);
  buf_field(b, false, "minor_collections", g->minor_collections);
  buf_field(b, false, "major_collections", g->major_collections);
  buf_field(b, false, "compactions", g->compactions);
  buf_lit(b, "},\n");
  buf_lit(b, "\"totals\":{");
  add_counts(b, total);
  buf_lit(b, "},\n\"stacks\":[");
  for (size_t i = 0; i < n; i++) {
    buf_add(b, i ? ",\n{" : "\n{", i ? 3 : 2);
    add_counts(b, rs[i].count);
    buf_lit(b, ",\"frames\":[");
    for (size_t f = 0; f < rs[i].n; f++) {
      const struct frame_obj *o = &objs[by_rank[rs[i].ranks[f]]];
      if (f) buf_lit(b, ",");
      buf_add(b, o->json, o->len);
    }
    buf_lit(b, "]}");
  }
  buf_lit(b, "\n]}\n");
  free(by_rank);
  free(rs);
  free(arena);
  return true;
}

/* out with %p replaced by the pid and %% by %. */
static char *expand_out(const char *tmpl)
{
  struct buf b = BUF_INIT;
  buf_lit(&b, "");
  for (const char *p = tmpl; *p; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      buf_printf(&b, "%ld", (long)getpid());
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      buf_lit(&b, "%");
      p++;
    } else {
      buf_add(&b, p, 1);
    }
  }
  if (b.err) { free(b.s); return NULL; }
  return b.s;
}

/* `*fd` is `path` opened for writing when it exists and is not a
 * regular file (design 5), else -1. The type is checked again on the
 * open descriptor: a regular file put there since stat is left alone
 * (opened without O_CREAT or O_TRUNC, closed unwritten). Returns 0 or
 * an errno. */
static int open_in_place(const char *path, int *fd)
{
  struct stat st;
  *fd = -1;
  if (stat(path, &st) != 0 || S_ISREG(st.st_mode)) return 0;
  int d = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (d < 0) return errno;
  if (fstat(d, &st) != 0 || S_ISREG(st.st_mode)) {
    close(d);
    return 0;
  }
  *fd = d;
  return 0;
}

#define TMP_TRIES 100

/* A new temporary file beside `path`, its name in `tmp` (design 5):
 * `<path>.tmp.<pid>`, or `<path>.tmp.<pid>.<n>` when that name is
 * taken. O_EXCL and O_NOFOLLOW: an existing name, whatever it is (a
 * symlink, a hard link, a file), is never opened. Returns the
 * descriptor, or -1 with errno set. */
static int create_tmp(const char *path, char *tmp, size_t len)
{
  for (unsigned i = 0; i < TMP_TRIES; i++) {
    if (i == 0) snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
    else snprintf(tmp, len, "%s.tmp.%ld.%u", path, (long)getpid(), i);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

/* Stream the profile to `path` through a temporary file and rename, so
 * that `path` only ever holds a complete profile (or write it in
 * place, design 5). Returns 0 or an errno. */
static int write_profile(const char *path, const struct gc_totals *g)
{
  size_t len = strlen(path) + 64;
  char *tmp = malloc(len);
  char *window = malloc(OUT_WINDOW);
  int err = 0, fd = -1;
  if (tmp == NULL || window == NULL) { err = ENOMEM; goto out; }
  err = open_in_place(path, &fd);
  if (err != 0) goto out;
  bool in_place = fd >= 0;
  if (!in_place && (fd = create_tmp(path, tmp, len)) < 0) {
    err = errno;
    goto out;
  }
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    err = errno;
    close(fd);
  } else {
    struct buf b = { window, 0, OUT_WINDOW, 0, f };
    if (!render(&b, g) && b.err == 0) b.err = ENOMEM;
    buf_flush(&b);
    err = b.err;
    if (fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  }
  if (in_place) goto out;
  if (err == 0 && rename(tmp, path) != 0) err = errno;
  if (err != 0) unlink(tmp);
 out:
  free(window);
  free(tmp);
  return err;
}

int caml_memprof_tracker_finish(int retcode)
{
  if (profile == Val_unit) return retcode;
  if (atomic_exchange(&finished, 1)) return retcode;

  caml_memprof_stop_c(profile);
  struct gc_totals g = read_gc_totals();

  /* Reachability at exit, not GC timing, decides "live": by a walk of
   * the heap (memprof_reach.c) where that is exact, else by the GC.
   * memprof judges major blocks when a cycle ends
   * (caml_memprof_after_major_gc, before the colours flip), so two
   * cycle ends suffice: the one in progress, which may still have
   * marked a block that died since, and one whose marking starts after
   * now and finds exactly the reachable blocks. gc_full_major_res runs
   * a third cycle only to sweep. */
  if (caml_memprof_env()->live_by_gc
      || !caml_memprof_judge_by_reachability()) {
    caml_minor_collection();
    for (int i = 0; i < 2; i++) caml_finish_major_cycle(0);
  }

  const char *tmpl = caml_memprof_env()->out;
  char *path = expand_out(tmpl);
  int err = path == NULL ? ENOMEM : write_profile(path, &g);
  if (err != 0) {
    fprintf(stderr, "%s: cannot write the allocation profile to '%s': %s\n",
            CAML_MEMPROF_ENV_VAR, path ? path : tmpl, strerror(err));
    if (retcode == 0) retcode = 2;
  }
  free(path);
  return retcode;
}
