/* memprof-ci: source locations of the tracker's raw callstack slots.
 *
 * 1. What and when: caml/memprof_frames.h (resolution of slots into
 *    interned frame objects, ranking by text). Used at exit by
 *    memprof_profile.c; the JSON text of a frame is written with
 *    memprof_jsonbuf.c.
 * 2. Frame objects: an array indexed by id, plus an open addressing
 *    index of ids (id + 1, 0 for empty, at most half full) hashed by
 *    text, eight bytes a step; each object keeps its hash, so the index
 *    grows without reading the texts again. A frame is rendered into
 *    one scratch buffer; interning copies a new text (with its '\0')
 *    into 64 KiB chunks that live until exit, and an equal text already
 *    interned costs no copy and no allocation.
 * 3. Slots: an open addressing cache (at most half full) from a slot to
 *    its resolution; a resolution is malloc'd and never moved, so the
 *    pointers handed out stay valid.
 * 4. A slot's frames come from the runtime's debug information
 *    (caml_debuginfo_extract/next/location): frames without a valid
 *    location are skipped; a slot with no debug information, or none
 *    with a valid location, gives the one unknown frame (all fields
 *    null, not inlined).
 * 5. Ranking sorts the ids by text (strcmp). No frame object's text is
 *    a proper prefix of another's (each is a whole JSON object), so
 *    comparing rank sequences orders stacks as their joined texts.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "caml/backtrace_prim.h"
#include "caml/memprof_frames.h"
#include "caml/memprof_jsonbuf.h"

/**** Frame objects ****/

struct frame_obj { const char *json; size_t len; uint64_t hash; uint32_t rank; };
static struct frame_obj *objs = NULL;
static size_t objs_count = 0, objs_cap = 0;
static uint32_t *obj_index = NULL;       /* id + 1, open addressing */
static size_t obj_index_cap = 0;

/* A multiply and a fold per eight bytes: a frame's text is mostly its
 * file's path, often absolute and tens of bytes long. */
static uint64_t hash_text(const char *s, size_t n)
{
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n, w;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  w = 0;
  memcpy(&w, s + i, n - i);
  h = (h ^ w) * 0x94D049BB133111EBull;
  return h ^ (h >> 32);
}

static void obj_index_insert(uint32_t id)
{
  size_t mask = obj_index_cap - 1;
  size_t j = objs[id].hash & mask;
  while (obj_index[j] != 0) j = (j + 1) & mask;
  obj_index[j] = id + 1;
}

/* The texts' chunks (design 2). */
#define TEXT_CHUNK ((size_t)64 * 1024)
static char *text_next = NULL;
static size_t text_left = 0;

/* A copy of the `len` bytes at `s` and a '\0', kept until exit; NULL
 * if out of memory. */
static const char *keep_text(const char *s, size_t len)
{
  if (len + 1 > text_left) {
    size_t size = len + 1 > TEXT_CHUNK ? len + 1 : TEXT_CHUNK;
    char *chunk = malloc(size);
    if (chunk == NULL) return NULL;
    text_next = chunk;
    text_left = size;
  }
  char *p = text_next;
  memcpy(p, s, len);
  p[len] = '\0';
  text_next += len + 1;
  text_left -= len + 1;
  return p;
}

/* The id of the frame object of text `json` (not kept: a new one is
 * copied), stored if new; -1 if out of memory. */
static int64_t intern(const char *json, size_t len)
{
  if (2 * (objs_count + 1) > obj_index_cap) {
    size_t cap = obj_index_cap ? 2 * obj_index_cap : 4096;
    uint32_t *t = calloc(cap, sizeof *t);
    if (t == NULL) return -1;
    free(obj_index);
    obj_index = t;
    obj_index_cap = cap;
    for (size_t i = 0; i < objs_count; i++) obj_index_insert((uint32_t)i);
  }
  size_t mask = obj_index_cap - 1;
  uint64_t hash = hash_text(json, len);
  for (size_t j = hash & mask; obj_index[j] != 0; j = (j + 1) & mask) {
    struct frame_obj *o = &objs[obj_index[j] - 1];
    if (o->hash == hash && o->len == len && memcmp(o->json, json, len) == 0) {
      return obj_index[j] - 1;
    }
  }
  if (objs_count == objs_cap) {
    size_t cap = objs_cap ? 2 * objs_cap : 1024;
    struct frame_obj *t = realloc(objs, cap * sizeof *t);
    if (t == NULL) return -1;
    objs = t;
    objs_cap = cap;
  }
  const char *kept = keep_text(json, len);
  if (kept == NULL) return -1;
  uint32_t id = (uint32_t)objs_count++;
  objs[id] = (struct frame_obj){ kept, len, hash, 0 };
  obj_index_insert(id);
  return id;
}

/**** Slots ****/

static const char unknown_frame[] =
  "{\"file\":null,\"line\":null,\"col_start\":null,\"col_end\":null,"
  "\"function\":null,\"inlined\":false}";

/* The frame objects of one slot. */
typedef struct caml_memprof_slot_frames {
  backtrace_slot slot;
  uint32_t *ids;                      /* innermost first */
  size_t n;                           /* at least 1 */
} slot_frames;

static slot_frames **slot_cache = NULL;  /* open addressing */
static size_t slot_cache_cap = 0, slot_cache_count = 0;

/* The buffer each frame's text is rendered into (design 2). */
static struct caml_memprof_buf scratch = CAML_MEMPROF_BUF_INIT;

/* Resolve `slot` into `sf` (ids of its frame objects, innermost first);
 * false if out of memory. */
static bool resolve_slot_uncached(backtrace_slot slot, slot_frames *sf)
{
  sf->slot = slot;
  sf->n = 0;
  sf->ids = NULL;
  size_t cap = 0;
  debuginfo d = caml_debuginfo_extract(slot);
  for (bool any = false;; d = caml_debuginfo_next(d)) {
    struct caml_memprof_buf *b = &scratch;
    b->len = 0;
    if (d != NULL) {
      struct caml_loc_info li;
      memset(&li, 0, sizeof li);
      caml_debuginfo_location(d, &li);
      if (!li.loc_valid) continue;
      caml_memprof_buf_lit(b, "{\"file\":");
      caml_memprof_buf_json_string(b, li.loc_filename);
      caml_memprof_buf_lit(b, ",\"line\":");
      caml_memprof_buf_int(b, li.loc_start_lnum);
      caml_memprof_buf_lit(b, ",\"col_start\":");
      caml_memprof_buf_int(b, li.loc_start_chr);
      caml_memprof_buf_lit(b, ",\"col_end\":");
      caml_memprof_buf_int(b, li.loc_end_chr);
      caml_memprof_buf_lit(b, ",\"function\":");
      caml_memprof_buf_json_string(b, li.loc_defname);
      if (li.loc_is_inlined) caml_memprof_buf_lit(b, ",\"inlined\":true}");
      else caml_memprof_buf_lit(b, ",\"inlined\":false}");
    } else if (!any) {
      caml_memprof_buf_add(b, unknown_frame, sizeof unknown_frame - 1);
    } else {
      return true;
    }
    any = true;
    if (b->err) { b->err = 0; return false; }
    int64_t id = intern(b->s, b->len);
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

/* A multiply and a fold, as the site table hashes a one-slot stack. */
static uint64_t hash_slot(backtrace_slot slot)
{
  uint64_t h = (0x9E3779B97F4A7C15ull ^ 1 ^ (uint64_t)(uintptr_t)slot)
    * 0xBF58476D1CE4E5B9ull;
  return h ^ (h >> 31);
}

static slot_frames **slot_cache_find(backtrace_slot slot)
{
  size_t mask = slot_cache_cap - 1;
  size_t j = hash_slot(slot) & mask;
  while (slot_cache[j] != NULL && slot_cache[j]->slot != slot) {
    j = (j + 1) & mask;
  }
  return &slot_cache[j];
}

/* The resolution of `slot`, cached for good; NULL if out of memory. */
static const slot_frames *resolve_slot(backtrace_slot slot)
{
  slot_frames **cell = slot_cache_cap ? slot_cache_find(slot) : NULL;
  if (cell != NULL && *cell != NULL) return *cell;
  if (2 * (slot_cache_count + 1) > slot_cache_cap) {
    slot_frames **old = slot_cache;
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
  slot_frames *sf = malloc(sizeof *sf);
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

/* In front of the cache, a small direct-mapped one: a profile's stacks
 * are many (one per sample at worst) but made of few distinct slots,
 * most of them repeated from stack to stack. */
#define FRONT_SIZE 256
static struct { backtrace_slot slot; const slot_frames *sf; } front[FRONT_SIZE];

bool caml_memprof_stack_ids(const backtrace_slot *slots, size_t n,
                            struct caml_memprof_ids *out)
{
  for (size_t k = 0; k < n; k++) {
    size_t f = (hash_slot(slots[k]) >> 32) & (FRONT_SIZE - 1);
    const slot_frames *sf = front[f].sf;
    if (sf == NULL || front[f].slot != slots[k]) {
      sf = resolve_slot(slots[k]);
      if (sf == NULL) return false;
      front[f].slot = slots[k];
      front[f].sf = sf;
    }
    if (out->cap - out->len < sf->n) {
      size_t cap = out->cap ? out->cap : 1024;
      while (cap - out->len < sf->n) cap *= 2;
      uint32_t *v = realloc(out->v, cap * sizeof *v);
      if (v == NULL) return false;
      out->v = v;
      out->cap = cap;
    }
    for (size_t i = 0; i < sf->n; i++) out->v[out->len++] = sf->ids[i];
  }
  return true;
}

/**** Ranks ****/

static int by_text(const void *a, const void *b)
{
  return strcmp(objs[*(const uint32_t *)a].json, objs[*(const uint32_t *)b].json);
}

struct caml_memprof_frame_text *caml_memprof_rank_frames(size_t *count)
{
  size_t n = objs_count ? objs_count : 1;
  uint32_t *by_rank = malloc(n * sizeof *by_rank);
  struct caml_memprof_frame_text *texts = malloc(n * sizeof *texts);
  if (by_rank == NULL || texts == NULL) {
    free(by_rank);
    free(texts);
    return NULL;
  }
  for (size_t i = 0; i < objs_count; i++) by_rank[i] = (uint32_t)i;
  qsort(by_rank, objs_count, sizeof *by_rank, by_text);
  for (size_t r = 0; r < objs_count; r++) {
    struct frame_obj *o = &objs[by_rank[r]];
    o->rank = (uint32_t)r;
    texts[r].json = o->json;
    texts[r].len = o->len;
  }
  free(by_rank);
  *count = objs_count;
  return texts;
}

void caml_memprof_ids_to_ranks(uint32_t *ids, size_t n)
{
  for (size_t i = 0; i < n; i++) ids[i] = objs[ids[i]].rank;
}
