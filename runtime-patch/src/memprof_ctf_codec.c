/* memprof-ci: the encoders inside memtrace's CTF events.
 *
 * 1. What: caml/memprof_ctf_codec.h. The format facts follow
 *    memtrace's reader (src/trace.ml, src/backtrace_codec.ml,
 *    src/location_codec.ml of github:janestreet/memtrace): whatever
 *    it decodes, this writes.
 * 2. Backtrace codes: 16 bits each, a 14-bit cache bucket and a 2-bit
 *    tag: 3 is a miss (the 64-bit slot follows and goes into the
 *    bucket), 0, 1 and 2 a hit followed by 0, 1 or N (a byte follows,
 *    at most 255) slots correctly predicted. A slot may sit in one of
 *    two buckets (two hashes); a miss replaces the one used longer
 *    ago. Each bucket predicts the bucket that followed it last time;
 *    every code sets the prediction of the bucket before it (bucket 0
 *    before the first code), as the reader does.
 * 3. Locations: per location 48 bits (line 20, start char 8, end char
 *    10, file code 5, function code 5), then the file name if its code
 *    is 31 (not among the 31 most recent), then the function name if
 *    its code is 31 (not among the 31 most recent of that file). A slot
 *    with too many locations to fit CAML_CTF_LOC_MAX_BYTES is written
 *    as memtrace's unknown location.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "caml/backtrace_prim.h"
#include "caml/memprof_ctf_codec.h"

void caml_ctf_put_vint(struct caml_ctf_buf *w, int64_t v)
{
  if (v >= 0 && v <= 252) {
    caml_ctf_put8(w, (unsigned)v);
  } else if (v >= 0 && v <= 0xffff) {
    caml_ctf_put8(w, 253);
    caml_ctf_put16(w, (unsigned)v);
  } else if (v >= INT32_MIN && v <= INT32_MAX) {
    caml_ctf_put8(w, 254);
    caml_ctf_put32(w, (uint32_t)(int32_t)v);
  } else {
    caml_ctf_put8(w, 255);
    caml_ctf_put64(w, (uint64_t)v);
  }
}

void caml_ctf_put_string(struct caml_ctf_buf *w, const char *s)
{
  size_t n = strlen(s);
  memcpy(w->b + w->pos, s, n + 1);
  w->pos += n + 1;
}

/**** Backtraces (design 2) ****/

static void put_hit(struct caml_ctf_buf *w, unsigned bucket, unsigned ncorrect)
{
  if (ncorrect <= 1) {
    caml_ctf_put16(w, (bucket << 2) | ncorrect);
  } else {
    caml_ctf_put16(w, (bucket << 2) | 2);
    caml_ctf_put8(w, ncorrect);
  }
}

/* After a hit on `hit`: follow the predictions from it while they are
 * right; writes the hit's code. Returns the bucket that predicted
 * wrong (or the last one), and moves `*pos` past the slots covered. */
static unsigned follow_predictions(struct caml_ctf_bt_cache *c,
                                   struct caml_ctf_buf *w, size_t limit,
                                   uint64_t alloc_id, const backtrace_slot *cs,
                                   ptrdiff_t *pos, unsigned hit, size_t *ncodes)
{
  unsigned orig = hit, pred = hit, ncorrect = 0;
  while (*pos >= 0 && w->pos + 2 <= limit) {
    unsigned pb = c->next[pred];
    if (c->slot[pb] != (uint64_t)(uintptr_t)cs[*pos]) break;
    if (ncorrect == 255) {
      /* A new run: a hit on the predicted bucket. */
      put_hit(w, orig, ncorrect);
      c->date[pb] = alloc_id;
      c->next[pred] = pb;
      orig = pred = pb;
      ncorrect = 0;
      (*ncodes)++;
    } else {
      pred = pb;
      ncorrect++;
    }
    (*pos)--;
  }
  put_hit(w, orig, ncorrect);
  return pred;
}

size_t caml_ctf_put_backtrace(struct caml_ctf_bt_cache *c,
                              struct caml_ctf_buf *w, uint64_t alloc_id,
                              const backtrace_slot *cs, size_t n,
                              caml_ctf_miss_fn miss, void *arg)
{
  const uint64_t mask = CAML_CTF_CACHE_SIZE - 1;
  size_t limit = w->pos + CAML_CTF_BT_MAX_BYTES - 10, ncodes = 0;
  unsigned predictor = 0;
  ptrdiff_t pos = (ptrdiff_t)n - 1;
  while (pos >= 0 && w->pos <= limit) {
    uint64_t s = (uint64_t)(uintptr_t)cs[pos];
    unsigned h1 = (unsigned)(((s * 0x4983723ull) >> 11) & mask);
    unsigned h2 = (unsigned)(((s * 0xfdea731ull) >> 21) & mask);
    unsigned hit = c->slot[h1] == s ? h1 : c->slot[h2] == s ? h2 : ~0u;
    ncodes++;
    pos--;
    if (hit != ~0u) {
      c->date[hit] = alloc_id;
      c->next[predictor] = (uint16_t)hit;
      predictor = follow_predictions(c, w, limit, alloc_id, cs, &pos, hit,
                                     &ncodes);
    } else {
      miss(arg, cs[pos + 1]);
      unsigned b = c->date[h1] < c->date[h2] ? h1 : h2;
      c->slot[b] = s;
      c->date[b] = alloc_id;
      c->next[predictor] = (uint16_t)b;
      caml_ctf_put16(w, (b << 2) | 3);
      caml_ctf_put64(w, s);
      predictor = b;
    }
  }
  return ncodes;
}

void caml_ctf_put_verifier(struct caml_ctf_bt_cache *c, struct caml_ctf_buf *w)
{
  if (c == NULL) {
    caml_ctf_put16(w, 0xffff);
    caml_ctf_put16(w, 0);
    caml_ctf_put64(w, 0);
    return;
  }
  unsigned ix = c->verify_ix;
  c->verify_ix = (uint16_t)((ix + 5413) & (CAML_CTF_CACHE_SIZE - 1));
  caml_ctf_put16(w, ix);
  caml_ctf_put16(w, c->next[ix]);
  caml_ctf_put64(w, c->slot[ix]);
}

/**** Locations (design 3) ****/

/* The code of `name` among `t[0 .. 30]`, moved to the front, or 31 after
 * pushing a copy of it (NULL name stored if out of memory: -1). */
static int mtf_code(char **t, const char *name, char **evicted)
{
  *evicted = NULL;
  for (int i = 0; i < CAML_CTF_MTF && t[i] != NULL; i++) {
    if (strcmp(t[i], name) == 0) {
      char *e = t[i];
      memmove(t + 1, t, i * sizeof *t);
      t[0] = e;
      return i;
    }
  }
  char *copy = strdup(name);
  if (copy == NULL) return -1;
  *evicted = t[CAML_CTF_MTF - 1];
  memmove(t + 1, t, (CAML_CTF_MTF - 1) * sizeof *t);
  t[0] = copy;
  return CAML_CTF_MTF;
}

static int file_code(struct caml_ctf_mtf *m, const char *name)
{
  struct caml_ctf_mtf_file **f = m->files;
  for (int i = 0; i < CAML_CTF_MTF && f[i] != NULL; i++) {
    if (strcmp(f[i]->name, name) == 0) {
      struct caml_ctf_mtf_file *e = f[i];
      memmove(f + 1, f, i * sizeof *f);
      f[0] = e;
      return i;
    }
  }
  struct caml_ctf_mtf_file *e = calloc(1, sizeof *e);
  if (e == NULL || (e->name = strdup(name)) == NULL) { free(e); return -1; }
  struct caml_ctf_mtf_file *old = f[CAML_CTF_MTF - 1];
  if (old != NULL) {
    for (int i = 0; i < CAML_CTF_MTF; i++) free(old->defs[i]);
    free(old->name);
    free(old);
  }
  memmove(f + 1, f, (CAML_CTF_MTF - 1) * sizeof *f);
  f[0] = e;
  return CAML_CTF_MTF;
}

static const struct caml_loc_info unknown_loc = {
  1, 0, "<unknown>", "??", 1, 1, 1, 1, 0, 0
};

static unsigned clamp(int v, unsigned lim)
{ return v < 0 || (unsigned)v > lim ? lim : (unsigned)v; }

static int put_one(struct caml_ctf_mtf *m, struct caml_ctf_buf *w,
                   const struct caml_loc_info *li)
{
  char *evicted;
  int fc = file_code(m, li->loc_filename);
  if (fc < 0) return 0;
  int dc = mtf_code(m->files[0]->defs, li->loc_defname, &evicted);
  free(evicted);
  if (dc < 0) return 0;
  uint64_t bits = clamp(li->loc_start_lnum, 0xfffff)
    | (uint64_t)clamp(li->loc_start_chr, 0xff) << 20
    | (uint64_t)clamp(li->loc_end_chr, 0x3ff) << 28
    | (uint64_t)fc << 38 | (uint64_t)dc << 43;
  caml_ctf_put32(w, (uint32_t)bits);
  caml_ctf_put16(w, (unsigned)(bits >> 32));
  if (fc == CAML_CTF_MTF) caml_ctf_put_string(w, li->loc_filename);
  if (dc == CAML_CTF_MTF) caml_ctf_put_string(w, li->loc_defname);
  return 1;
}

int caml_ctf_put_location(struct caml_ctf_mtf *m, struct caml_ctf_buf *w,
                          backtrace_slot slot)
{
  struct caml_loc_info locs[255];
  size_t n = 0, worst = 9;
  bool fits = true;
  for (debuginfo d = caml_debuginfo_extract(slot); d != NULL;
       d = caml_debuginfo_next(d)) {
    struct caml_loc_info li;
    memset(&li, 0, sizeof li);
    caml_debuginfo_location(d, &li);
    if (!li.loc_valid) continue;
    if (n == 255) { fits = false; break; }
    locs[n++] = li;
    worst += 6 + strlen(li.loc_filename) + 1 + strlen(li.loc_defname) + 1;
  }
  if (!fits || worst > CAML_CTF_LOC_MAX_BYTES) { locs[0] = unknown_loc; n = 1; }
  size_t start = w->pos;
  caml_ctf_put64(w, (uint64_t)(uintptr_t)slot);
  caml_ctf_put8(w, (unsigned)n);
  /* Outermost first: the debug information lists the innermost first. */
  for (size_t i = n; i-- > 0;) {
    if (!put_one(m, w, &locs[i])) { w->pos = start; return 0; }
  }
  return 1;
}
