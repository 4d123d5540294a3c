/* memprof-ci: exact counts per allocation point (OCAMLMEMPROF points=on).
 *
 * 1. Ids. The runtime is configured with reserved header bits
 *    (HEADER_RESERVED_BITS, build-runtime.sh), and a block's allocation
 *    point is its header's reserved bits. Native code writes them: the
 *    compiler gives each allocation point of a unit an index in the
 *    unit's table and or-s it with the table's first word, its base
 *    (selectgen.ml). This file assigns the bases when it registers the
 *    tables: the units linked in at start (`caml_alloc_sites`, the list
 *    the startup file ends with), a plugin's units when natdynlink loads
 *    them. A table of n points gets a base aligned to the power of two
 *    P >= n, above the pseudo ids, so that or-ing an index is adding it
 *    and two units' ids never meet. A table keeps the base word it was
 *    linked with, all ones, until it is registered, so its blocks then
 *    carry CAML_POINT_UNREGISTERED: a native toplevel phrase, a unit
 *    past the id space, or any unit while counting is off (registering
 *    is then skipped, and nothing reads the bits).
 * 2. Pseudo ids, for blocks that no OCaml allocation point made:
 *    CAML_POINT_UNMARSHAL (intern.c), CAML_POINT_DUP (Obj.dup and
 *    Obj.with_tag, obj.c, which also serve {r with ...} on large
 *    records), and CAML_POINT_RUNTIME for every other block the runtime
 *    allocates: C primitives (caml_alloc_string, caml_copy_double,
 *    caml_make_vect, ...), a native allocation too large for the minor
 *    heap (caml_alloc_shr_check_gc), and all of bytecode, whose
 *    interpreter builds blocks at run time with no table of points.
 * 3. Counting, on per-domain arrays indexed by id, each mapped once for
 *    the whole id space (pages are touched only where ids are used), so
 *    no array ever moves and no registration has to grow one; a later
 *    domain in the same slot adds to the same arrays. Nothing is
 *    allocated on the OCaml heap and no collection is moved.
 *    - Minor: at the start of each minor collection, before anything is
 *      promoted, a walk of the domain's minor heap from young_ptr to
 *      young_end, which is headered without a hole there (the allocation
 *      paths undo an allocation before a collection). With several
 *      domains in the collection, each walks its own heap and all meet
 *      at a barrier before promoting, so no header is forwarded under a
 *      walk. Runs of equal headers are counted together: the next
 *      header's address then does not wait on a load of the size.
 *    - Major: caml_alloc_shr and its variants, and unmarshalling's own
 *      major allocation.
 *    - Promoted: in oldify, by the domain whose update of the young
 *      header succeeds, so a block two domains race for counts once.
 *    - Live at exit: each block the exit's walk of reachability enters
 *      (memprof_reach.c, or memprof_snapshot.c's walk), counted afresh
 *      by each walk (`live_begin`); without a completed walk the profile
 *      says why live is not given.
 * 4. The profile's "points" section lists the points with any count:
 *    the pseudo points by name, then each registered unit's points in
 *    table order, each with its file, line, characters and function as
 *    the compiler wrote them, and its counts.
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
#include "caml/domain.h"
#include "caml/domain_state.h"
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
  uintnat count;
  char entries[];               /* count of "file\tline\tstart\tend\tfn\0" */
};

struct registered { struct points_table *t; uintnat first; };

static caml_plat_mutex tables_lock = CAML_PLAT_MUTEX_INITIALIZER;
static struct registered *tables = NULL;        /* under tables_lock */
static size_t ntables = 0, tables_cap = 0;
static uintnat next_id = CAML_POINT_FIRST;      /* under tables_lock */
static bool exhausted = false;

struct pair { uint64_t blocks, words; };
struct domain_counts { struct pair *minor, *major, *promoted; };
static struct domain_counts per_domain[Max_domains_max];
static _Atomic int slots_used = 0;        /* 1 + the highest slot with counts */
static struct pair *live = NULL;
static const char *live_missing = "no walk of the heap at exit";

static struct pair *id_array(void)
{
  void *p = mmap(NULL, N_IDS * sizeof(struct pair), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) caml_fatal_error("memprof-ci: out of memory for the "
                                        "allocation points' counters");
  return p;
}

/* The domain's arrays; each domain creates its own before it can
 * allocate (caml_memprof_points_count_minor runs first on it). */
static struct domain_counts *counts_of(caml_domain_state *d)
{
  struct domain_counts *c = &per_domain[d->id];
  if (c->minor == NULL) {
    c->major = id_array();
    c->promoted = id_array();
    c->minor = id_array();
    int used = atomic_load(&slots_used);
    while (used <= d->id
           && !atomic_compare_exchange_weak(&slots_used, &used, d->id + 1)) { }
  }
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
}

void caml_memprof_points_count_minor(caml_domain_state *d)
{
  struct pair *m = counts_of(d)->minor;
  header_t *p = (header_t *)d->young_ptr, *end = (header_t *)d->young_end;
  while (p < end) {
    header_t hd = *p;
    uintnat wh = Whsize_hd(hd);
    header_t *q = p + wh;
    uint64_t n = 1;
    while (q < end && *q == hd) { n++; q += wh; }
    struct pair *c = &m[Reserved_hd(hd)];
    c->blocks += n;
    c->words += n * wh;
    p = q;
  }
}

void caml_memprof_points_count_promoted(caml_domain_state *d, header_t hd)
{
  struct pair *c = &counts_of(d)->promoted[Reserved_hd(hd)];
  c->blocks++;
  c->words += Whsize_hd(hd);
}

void caml_memprof_points_count_major(caml_domain_state *d, header_t hd)
{
  struct pair *c = &counts_of(d)->major[Reserved_hd(hd)];
  c->blocks++;
  c->words += Whsize_hd(hd);
}

void caml_memprof_points_count_live(header_t hd)
{
  struct pair *c = &live[Reserved_hd(hd)];
  c->blocks++;
  c->words += Whsize_hd(hd);
}

void caml_memprof_points_live_begin(void)
{
  if (!caml_memprof_points_on) return;
  live_missing = NULL;
  memset(live, 0, next_id * sizeof *live);
  live[CAML_POINT_UNREGISTERED] = (struct pair){ 0, 0 };
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
static bool sum_id(uintnat id, struct pair out[KINDS])
{
  memset(out, 0, KINDS * sizeof *out);
  for (int i = 0, n = atomic_load(&slots_used); i < n; i++) {
    const struct domain_counts *c = &per_domain[i];
    if (c->minor == NULL) continue;
    const struct pair *src[3] = { c->minor, c->major, c->promoted };
    for (int k = 0; k < 3; k++) {
      out[k].blocks += src[k][id].blocks;
      out[k].words += src[k][id].words;
    }
  }
  if (live_missing == NULL) out[LIVE] = live[id];
  for (int k = 0; k < KINDS; k++) if (out[k].blocks) return true;
  return false;
}

static void render_counts(struct caml_memprof_buf *b, const struct pair c[KINDS])
{
  caml_memprof_buf_printf(b, ",%llu,%llu,%llu,%llu,%llu,%llu",
                          (unsigned long long)c[MINOR].blocks,
                          (unsigned long long)c[MINOR].words,
                          (unsigned long long)c[MAJOR].blocks,
                          (unsigned long long)c[MAJOR].words,
                          (unsigned long long)c[PROMOTED].blocks,
                          (unsigned long long)c[PROMOTED].words);
  if (live_missing == NULL) {
    caml_memprof_buf_printf(b, ",%llu,%llu]",
                            (unsigned long long)c[LIVE].blocks,
                            (unsigned long long)c[LIVE].words);
  } else {
    caml_memprof_buf_lit(b, ",null,null]");
  }
}

/* One field of a table entry: up to the next tab or NUL. */
static const char *field(const char *s, const char **end)
{
  const char *e = s;
  while (*e != '\t' && *e != '\0') e++;
  *end = e;
  return s;
}

static bool render_points(struct caml_memprof_buf *b)
{
  static const struct { uintnat id; const char *name; } pseudo[] = {
    { CAML_POINT_RUNTIME, "(runtime)" },
    { CAML_POINT_UNMARSHAL, "(unmarshal)" },
    { CAML_POINT_DUP, "(Obj.dup)" },
    { CAML_POINT_UNREGISTERED, "(unregistered)" },
  };
  struct pair c[KINDS];
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
    const char *e = tables[t].t->entries;
    for (uintnat i = 0; i < tables[t].t->count; i++) {
      const char *file_end, *line_end, *start_end, *stop_end;
      const char *file = field(e, &file_end);
      const char *line = field(file_end + 1, &line_end);
      const char *start = field(line_end + 1, &start_end);
      const char *stop = field(start_end + 1, &stop_end);
      const char *fn = stop_end + 1;
      size_t fn_len = strlen(fn);
      e = fn + fn_len + 1;
      if (!sum_id(tables[t].first + i, c)) continue;
      if (!first) caml_memprof_buf_lit(b, ",");
      caml_memprof_buf_lit(b, "\n[");
      first = false;
      caml_memprof_buf_json_string_n(b, file, file_end - file);
      caml_memprof_buf_printf(b, ",%.*s,%.*s,%.*s,", (int)(line_end - line),
                              line, (int)(start_end - start), start,
                              (int)(stop_end - stop), stop);
      caml_memprof_buf_json_string_n(b, fn, fn_len);
      render_counts(b, c);
    }
  }
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
  caml_memprof_buf_lit(b, "\n]}");
  return b->err == 0;
}

#else /* bytecode, no reserved header bits, or Windows */

static bool requested = false;

void caml_memprof_points_start(void) { requested = true; }
void caml_memprof_points_register(void *table) { (void)table; }
void caml_memprof_points_count_minor(caml_domain_state *d) { (void)d; }
void caml_memprof_points_count_promoted(caml_domain_state *d, header_t hd)
{ (void)d; (void)hd; }
void caml_memprof_points_count_major(caml_domain_state *d, header_t hd)
{ (void)d; (void)hd; }
void caml_memprof_points_count_live(header_t hd) { (void)hd; }
void caml_memprof_points_live_begin(void) { }
void caml_memprof_points_live_end(const char *missing) { (void)missing; }
bool caml_memprof_points_render(struct caml_memprof_buf *b)
{
  if (!requested) return true;
  caml_memprof_buf_lit(b, ",\n\"points\":{\"live\":null,\"complete\":false,"
                       "\"unavailable\":\"no allocation points in this "
                       "runtime (bytecode)\",\"points\":[]}");
  return b->err == 0;
}

#endif
