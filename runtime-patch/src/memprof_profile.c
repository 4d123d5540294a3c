/* memprof-ci: the built-in tracker's profile document.
 *
 * 1. What: caml/memprof_profile.h. Relies on memprof_frames.c (slots
 *    to ranked frame objects) and memprof_jsonbuf.c (the output
 *    buffer); the tracker (memprof_tracker.c) supplies the stacks and
 *    memprof_outfile.c the streaming buffer.
 * 2. Two stages (caml/memprof_profile.h). Sorting reads the stacks'
 *    slots and never their counters: each distinct slot is resolved
 *    once; a stack becomes the ids of its frame objects (all stacks in
 *    one arena), which become ranks once every frame object is known
 *    and ranked; the stacks are sorted by their ranks, which is the
 *    order of their JSON frame texts. Rendering reads the counters, and
 *    stacks whose slots differ but resolve to the same frames, adjacent
 *    once sorted, make one line with the sum of their counts. The
 *    profile holds no copy of the counters: a program with a stack per
 *    sample has tens of thousands, and every new page of memory written
 *    at exit costs a page fault. With many stacks, the lines are cut
 *    into blocks of about 256 stacks, rendered by two threads in
 *    turn: the caller renders the even blocks into the output while a
 *    second thread renders the next odd block into one reused buffer,
 *    which the caller appends and hands back (caml_memprof_beside: on a
 *    thread with every signal blocked; the caller renders every block
 *    when none can be started). The rendering's memory is therefore
 *    one block's text, whatever the number of stacks.
 * 3. The document (version 3, 4 when it ends with a snapshot, 5 with the
 *    allocation points, 6 with the allocation budgets):
 *    header (format, version, OCaml version, backend, argv, and
 *    `incomplete` only for a run the runtime ended abnormally), config
 *    (rate, seed, frames, stacks when cut at the site, else stackmem in
 *    native code), gc, totals
 *    (the sums over stacks, every count), the frame table (every frame
 *    object once, one per line, in rank order, so a frame's index is
 *    its rank), then one line per stack with its counts that are not
 *    zero (most of a stack's are: the line is about half as long),
 *    "cut" when it holds stacks cut past the budget, and its frames as
 *    indices into the table; last, with snapshot=exit, the snapshot
 *    (memprof_snapshot.c), after the points (memprof_points.c) and the
 *    budgets (memprof_budgets.c). The counts of a stack, and
 *    then its indices, are each assembled in a local line and added at
 *    once (there is one stack per sample at worst, so per-piece
 *    additions would dominate).
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdint.h>
#ifndef _WIN32
#include <signal.h>
#endif
#include <stdlib.h>
#include <string.h>
#include "caml/mlvalues.h"
#include "caml/camlatomic.h"
#include "caml/domain_state.h"
#include "caml/gc_ctrl.h"
#include "caml/gc_stats.h"
#include "caml/major_gc.h"
#include "caml/memprof_budgets.h"
#include "caml/memprof_env.h"
#include "caml/memprof_frames.h"
#include "caml/memprof_jsonbuf.h"
#include "caml/memprof_points.h"
#include "caml/memprof_profile.h"
#include "caml/memprof_snapshot.h"
#include "caml/minor_gc.h"
#include "caml/shared_heap.h"
#include "caml/version.h"

#define N_COUNTS CAML_MEMPROF_N_COUNTS
#define PREFETCH_AHEAD 8
/* Fewer stacks than this are rendered by one thread. */
#define SPLIT_MIN 4096

/* `,"key":` of each count, in schema order; live_samples (derived)
 * last. Each is padded to KEY_ROOM bytes so that it is copied with one
 * fixed-size memcpy (inlined), and `len` bytes of it are kept; the
 * first key is written without its comma. */
#define KEY_ROOM 24
static const struct { char s[KEY_ROOM]; unsigned char len; }
  count_keys[N_COUNTS + 1] = {
#define KEY(k) { ",\"" k "\":", sizeof(k) + 3 }
  KEY("blocks"), KEY("samples"), KEY("words"),
  KEY("minor_samples"), KEY("major_samples"), KEY("marshal_samples"),
  KEY("custom_samples"), KEY("promoted_samples"),
  KEY("collected_samples"), KEY("peak_live_samples"), KEY("live_samples"),
#undef KEY
};

/* Write `v` in decimal at `p`; returns the end. */
static char *put_uint(char *p, uintnat v)
{
  int n = 1;
  for (uintnat t = v; t >= 10; t /= 10) n++;
  for (char *q = p + n; q > p; v /= 10) *--q = (char)('0' + v % 10);
  return p + n;
}

struct caml_memprof_gc_totals caml_memprof_read_gc_totals(void)
{
  struct gc_stats s;
  caml_compute_gc_stats(&s);
  struct caml_memprof_gc_totals g;
  g.minor_words = s.alloc_stats.minor_words
    + (uintnat)(Caml_state->young_end - Caml_state->young_ptr);
  g.promoted_words = s.alloc_stats.promoted_words;
  g.major_words = s.alloc_stats.major_words + Caml_state->allocated_words;
  g.minor_collections = atomic_load(&caml_minor_collections_count);
  g.major_collections = caml_major_cycles_completed;
  g.compactions = atomic_load(&caml_compactions_count);
  /* As OCAMLRUNPARAM=v=0x400 reports them at exit (sys.c): the heap
   * statistics sampled at the last cycle end, or this domain's own
   * heap when no cycle has ended. */
  g.heap_words = s.heap_stats.pool_words + s.heap_stats.large_words;
  if (g.heap_words == 0) {
    g.heap_words = Wsize_bsize(caml_heap_size(Caml_state->shared_heap));
  }
  g.top_heap_words = s.heap_stats.pool_max_words + s.heap_stats.large_max_words;
  if (g.top_heap_words == 0) {
    g.top_heap_words = caml_top_heap_words(Caml_state->shared_heap);
  }
  return g;
}

/* A stack, resolved: its frame ranks and where its counters are. */
struct resolved {
  const uint32_t *ranks;
  size_t n;
  const atomic_uintnat *count;
  bool cut;                         /* cut past the stack budget */
};

struct caml_memprof_sorted {
  size_t nstacks;
  struct resolved *rs;                      /* nstacks, sorted */
  uint32_t *arena;                          /* every stack's ranks */
  struct caml_memprof_frame_text *texts;    /* by rank */
  size_t ntexts;
};

static int by_frames(const struct resolved *x, const struct resolved *y)
{
  size_t n = x->n < y->n ? x->n : y->n;
  for (size_t i = 0; i < n; i++) {
    if (x->ranks[i] != y->ranks[i]) return x->ranks[i] < y->ranks[i] ? -1 : 1;
  }
  return x->n < y->n ? -1 : x->n > y->n;
}

/* Frame `d` of stack `x` as a sort key: its rank, or -1 past the end
 * (a stack sorts before those it is a proper prefix of). */
Caml_inline int64_t rank_at(const struct resolved *x, size_t d)
{
  return d < x->n ? (int64_t)x->ranks[d] : -1;
}

Caml_inline void swap_stacks(struct resolved *a, size_t i, size_t j)
{
  struct resolved t = a[i];
  a[i] = a[j];
  a[j] = t;
}

/* Sorts `a[0..n)`, stacks whose first `d` ranks are all equal, by
 * by_frames. A multikey quicksort: each partition step looks at one
 * rank per stack and stacks equal there go on to the next rank, so a
 * rank shared by many stacks is compared once per partition rather than
 * in every comparison (deep recursions give thousands of stacks with
 * long common prefixes). The smaller outer partition is sorted by a
 * recursive call and the larger one by the loop, so the C stack grows
 * by at most log2 n frames per rank of depth. */
static void sort_stacks(struct resolved *a, size_t n, size_t d)
{
  while (n > 1) {
    if (n < 8) {                      /* insertion sort */
      for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && by_frames(&a[j - 1], &a[j]) > 0; j--) {
          swap_stacks(a, j - 1, j);
        }
      }
      return;
    }
    /* Median of three ranks as the pivot. */
    int64_t x = rank_at(&a[0], d), y = rank_at(&a[n / 2], d),
            z = rank_at(&a[n - 1], d);
    int64_t pivot = x < y ? (y < z ? y : (x < z ? z : x))
                          : (x < z ? x : (y < z ? z : y));
    /* [0, lt) below the pivot, [lt, i) equal, (gt, n) above. */
    size_t lt = 0, i = 0, gt = n;
    while (i < gt) {
      int64_t r = rank_at(&a[i], d);
      if (r < pivot) swap_stacks(a, lt++, i++);
      else if (r > pivot) swap_stacks(a, i, --gt);
      else i++;
    }
    if (pivot >= 0) sort_stacks(a + lt, gt - lt, d + 1);
    size_t above = n - gt;
    if (lt < above) {
      sort_stacks(a, lt, d);
      a += gt;
      n = above;
    } else {
      sort_stacks(a + gt, above, d);
      n = lt;
    }
  }
}

/* Counts as `"key":n,...` (design 3): every count for the totals, and
 * for a stack (`sparse`) only those that are not zero. Returns whether
 * any was written. */
static bool add_counts(struct caml_memprof_buf *b, const uintnat *count,
                       bool sparse)
{
  uintnat samples = count[CAML_MEMPROF_COUNT_SAMPLES];
  uintnat collected = count[CAML_MEMPROF_COUNT_COLLECTED];
  uintnat live = samples >= collected ? samples - collected : 0;
  /* Room for every key and 20 digits each. */
  char line[(N_COUNTS + 1) * (KEY_ROOM + 20) + 1];
  char *p = line;
  for (int c = 0; c <= N_COUNTS; c++) {
    uintnat v = c < N_COUNTS ? count[c] : live;
    if (sparse && v == 0) continue;
    memcpy(p, count_keys[c].s, KEY_ROOM);
    p = put_uint(p + count_keys[c].len, v);
  }
  if (p == line) return false;
  caml_memprof_buf_add(b, line + 1, p - line - 1);  /* no first comma */
  return true;
}

/* A stack's `,"frames":[i,j,...]}` (without its comma when `first`):
 * its frame ranks, which are the indices into the frame table,
 * assembled in a local line added in pieces of at most its size (a
 * stack has a few dozen frames). */
static void add_indices(struct caml_memprof_buf *b, const uint32_t *ranks,
                        size_t n, bool first)
{
  char line[512];
  static const char head[] = ",\"frames\":[";
  memcpy(line, head + first, sizeof head - 1 - first);
  char *p = line + sizeof head - 1 - first;
  for (size_t f = 0; f < n; f++) {
    if (p + CAML_MEMPROF_UINT_DIGITS + 3 > line + sizeof line) {
      caml_memprof_buf_add(b, line, p - line);
      p = line;
    }
    if (f) *p++ = ',';
    p = put_uint(p, ranks[f]);
  }
  *p++ = ']';
  *p++ = '}';
  caml_memprof_buf_add(b, line, p - line);
}

void caml_memprof_beside_start(struct caml_memprof_beside *w,
                               void *(*fn)(void *), void *arg,
                               bool on_thread)
{
  w->fn = fn;
  w->arg = arg;
  w->started = false;
#ifndef _WIN32
  if (on_thread) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    w->started = pthread_create(&w->thread, NULL, fn, arg) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
#else
  (void)on_thread;
#endif
}

void caml_memprof_beside_join(struct caml_memprof_beside *w)
{
#ifndef _WIN32
  if (w->started) {
    pthread_join(w->thread, NULL);
    w->started = false;
    return;
  }
#endif
  w->fn(w->arg);
}

void caml_memprof_sorted_free(struct caml_memprof_sorted *so)
{
  if (so == NULL) return;
  free(so->rs);
  free(so->arena);
  free(so->texts);
  free(so);
}

size_t caml_memprof_sorted_size(const struct caml_memprof_sorted *so)
{
  return so->nstacks;
}

const atomic_uintnat *caml_memprof_sorted_stack(
  const struct caml_memprof_sorted *so, size_t i,
  const uint32_t **ranks, size_t *n)
{
  if (ranks != NULL) {
    *ranks = so->rs[i].ranks;
    *n = so->rs[i].n;
  }
  return so->rs[i].count;
}

bool caml_memprof_sorted_same(const struct caml_memprof_sorted *so,
                              size_t i, size_t j)
{
  return by_frames(&so->rs[i], &so->rs[j]) == 0;
}

struct caml_memprof_sorting {
  struct caml_memprof_ids ids;        /* every stack's frame ids */
  struct resolved *rs;                /* each stack given: its counters and
                                         its number of ids; `ranks` is set
                                         at the end (the arena may move
                                         while it grows) */
  size_t n, cap;
  bool failed;                        /* out of memory */
};

struct caml_memprof_sorting *
caml_memprof_sorting_start(size_t nstacks, size_t nslots)
{
  struct caml_memprof_sorting *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  /* Each slot gives at least one frame: room for as many at first. */
  s->ids.cap = nslots ? nslots : 1;
  s->ids.v = malloc(s->ids.cap * sizeof *s->ids.v);
  s->cap = nstacks ? nstacks : 1;
  s->rs = malloc(s->cap * sizeof *s->rs);
  s->failed = s->ids.v == NULL || s->rs == NULL;
  return s;
}

bool caml_memprof_sorting_add(struct caml_memprof_sorting *s,
                              const backtrace_slot *slots, size_t nslots,
                              const atomic_uintnat *count, bool cut)
{
  if (s->failed) return false;
  if (s->n == s->cap) {
    struct resolved *rs = realloc(s->rs, 2 * s->cap * sizeof *rs);
    if (rs == NULL) { s->failed = true; return false; }
    s->rs = rs;
    s->cap *= 2;
  }
  size_t before = s->ids.len;
  if (!caml_memprof_stack_ids(slots, nslots, &s->ids)) {
    s->failed = true;
    return false;
  }
  s->rs[s->n].n = s->ids.len - before;
  s->rs[s->n].count = count;
  s->rs[s->n].cut = cut;
  s->n++;
  return true;
}

struct caml_memprof_sorted *
caml_memprof_sorting_end(struct caml_memprof_sorting *s)
{
  if (s == NULL) return NULL;
  struct caml_memprof_sorted *so = s->failed ? NULL : calloc(1, sizeof *so);
  if (so != NULL) so->texts = caml_memprof_rank_frames(&so->ntexts);
  if (so == NULL || so->texts == NULL) {
    caml_memprof_sorted_free(so);
    free(s->ids.v);
    free(s->rs);
    free(s);
    return NULL;
  }
  caml_memprof_ids_to_ranks(s->ids.v, s->ids.len);
  const uint32_t *at = s->ids.v;
  for (size_t i = 0; i < s->n; i++) {
    s->rs[i].ranks = at;
    at += s->rs[i].n;
  }
  so->nstacks = s->n;
  so->rs = s->rs;
  so->arena = s->ids.v;
  free(s);
  sort_stacks(so->rs, so->nstacks, 0);
  return so;
}

/* The counts of a stack (or a sum of them) with COUNT_SAMPLES derived,
 * added into `into`. */
Caml_inline void add_stack_counts(uintnat *into, const atomic_uintnat *c)
{
  uintnat v[N_COUNTS];
  for (int k = 0; k < N_COUNTS; k++) v[k] = atomic_load_relaxed(&c[k]);
  v[CAML_MEMPROF_COUNT_SAMPLES] = v[CAML_MEMPROF_COUNT_MINOR]
    + v[CAML_MEMPROF_COUNT_MAJOR] + v[CAML_MEMPROF_COUNT_CUSTOM];
  for (int k = 0; k < N_COUNTS; k++) into[k] += v[k];
}

/* The lines of the stacks `[from, to)` of `so`, each run of stacks
 * that resolve alike (adjacent once sorted) as one line with the sum of
 * their counts; `from` starts a run. */
static void render_lines(struct caml_memprof_buf *b,
                         const struct caml_memprof_sorted *so,
                         size_t from, size_t to)
{
  const struct resolved *rs = so->rs;
  for (size_t i = from, j; i < to; i = j) {
    /* The counters are in the tracker's records, read here in sorted
     * order, not in the order they lie in memory. */
    if (i + PREFETCH_AHEAD < to) {
      const char *c = (const char *)rs[i + PREFETCH_AHEAD].count;
      caml_prefetch(c);
      caml_prefetch(c + N_COUNTS * sizeof(uintnat) - 1);
      caml_prefetch(rs[i + PREFETCH_AHEAD].ranks);
    }
    uintnat count[N_COUNTS] = { 0 };
    add_stack_counts(count, rs[i].count);
    bool cut = rs[i].cut;
    for (j = i + 1; j < to && by_frames(&rs[i], &rs[j]) == 0; j++) {
      add_stack_counts(count, rs[j].count);
      cut |= rs[j].cut;
    }
    caml_memprof_buf_add(b, i ? ",\n{" : "\n{", i ? 3 : 2);
    bool counted = add_counts(b, count, true);
    if (cut) {
      caml_memprof_buf_add(b, ",\"cut\":true" + !counted, 11 - !counted);
      counted = true;
    }
    add_indices(b, rs[i].ranks, rs[i].n, !counted);
  }
}

/* The lines go out in blocks of about BLOCK_LINES stacks (each block
 * starts a run of stacks that resolve alike), rendered by two threads
 * in turn (design 2): the caller renders the even blocks straight into
 * the output; the thread beside renders each odd block into one
 * buffer, which the caller appends after the block before it and then
 * hands back. So at most one block's text is ever held in memory. */
#define BLOCK_LINES 256

struct relay {
  const struct caml_memprof_sorted *so;
  const size_t *cut;                  /* block k is [cut[k], cut[k+1]) */
  size_t nblocks;
  struct caml_memprof_buf buf;        /* growable, reused */
  bool full;                          /* buf holds the next odd block */
  bool inline_only;                   /* no thread: the caller renders all */
#ifndef _WIN32
  pthread_mutex_t lock;
  pthread_cond_t cond;
#endif
};

#ifndef _WIN32
static void relay_wait(struct relay *r, bool full)
{
  pthread_mutex_lock(&r->lock);
  while (r->full != full) pthread_cond_wait(&r->cond, &r->lock);
  pthread_mutex_unlock(&r->lock);
}

static void relay_set(struct relay *r, bool full)
{
  pthread_mutex_lock(&r->lock);
  r->full = full;
  pthread_cond_signal(&r->cond);
  pthread_mutex_unlock(&r->lock);
}
#endif

static void *render_odd_blocks(void *arg)
{
  struct relay *r = arg;
#ifndef _WIN32
  if (r->inline_only) return NULL;
  for (size_t k = 1; k < r->nblocks; k += 2) {
    relay_wait(r, false);
    r->buf.len = 0;
    if (r->buf.s != NULL) r->buf.s[0] = '\0';
    render_lines(&r->buf, r->so, r->cut[k], r->cut[k + 1]);
    relay_set(r, true);
  }
#endif
  return NULL;
}

/* The stacks' lines into `b`, with the thread beside when there are
 * enough of them and one can be started. */
static void render_all_lines(struct caml_memprof_buf *b,
                             const struct caml_memprof_sorted *so)
{
  size_t n = so->nstacks;
  size_t nblocks = (n + BLOCK_LINES - 1) / BLOCK_LINES;
  size_t *cut = n >= SPLIT_MIN ? malloc((nblocks + 1) * sizeof *cut) : NULL;
  if (cut == NULL) {
    render_lines(b, so, 0, n);
    return;
  }
  size_t m = 0;
  cut[m++] = 0;
  for (size_t k = 1; k < nblocks; k++) {
    size_t c = k * BLOCK_LINES;
    if (c <= cut[m - 1]) continue;
    while (c < n && by_frames(&so->rs[c - 1], &so->rs[c]) == 0) c++;
    if (c < n) cut[m++] = c;
  }
  cut[m] = n;
  struct relay r = { so, cut, m, CAML_MEMPROF_BUF_INIT, false, false };
  bool threaded = false;
#ifndef _WIN32
  threaded = pthread_mutex_init(&r.lock, NULL) == 0;
  if (threaded && pthread_cond_init(&r.cond, NULL) != 0) {
    pthread_mutex_destroy(&r.lock);
    threaded = false;
  }
#endif
  struct caml_memprof_beside w;
  caml_memprof_beside_start(&w, render_odd_blocks, &r, threaded && m > 1);
  r.inline_only = !w.started;
  for (size_t k = 0; k < m; k++) {
    if (k % 2 == 0 || r.inline_only) {
      render_lines(b, so, cut[k], cut[k + 1]);
      continue;
    }
#ifndef _WIN32
    relay_wait(&r, true);
    if (r.buf.err && !b->err) b->err = r.buf.err;
    if (r.buf.len > 0) caml_memprof_buf_add(b, r.buf.s, r.buf.len);
    relay_set(&r, false);
#endif
  }
  caml_memprof_beside_join(&w);
#ifndef _WIN32
  if (threaded) {
    pthread_cond_destroy(&r.cond);
    pthread_mutex_destroy(&r.lock);
  }
#endif
  free(r.buf.s);
  free(cut);
}

bool caml_memprof_render_profile(struct caml_memprof_buf *b,
                                 const struct caml_memprof_profile *p)
{
  const struct caml_memprof_env *env = caml_memprof_env();
  const struct caml_memprof_gc_totals *g = p->gc;
  const struct caml_memprof_sorted *so = p->sorted;

  /* Version 4 is version 3 with a snapshot, version 5 either with the
   * allocation points, version 6 any of them with the allocation budgets
   * (the format document). */
  caml_memprof_buf_printf(b, "{\"format\":\"memprof-ci/profile\","
                          "\"version\":%d,\"ocaml_version\":",
                          caml_memprof_budgets_any() ? 6
                          : env->points ? 5 : p->snapshot != NULL ? 4 : 3);
  caml_memprof_buf_json_string(b, OCAML_VERSION_STRING);
#ifdef NATIVE_CODE
  caml_memprof_buf_lit(b, ",\"backend\":\"native\",\"argv\":[");
#else
  caml_memprof_buf_lit(b, ",\"backend\":\"bytecode\",\"argv\":[");
#endif
  for (size_t i = 0; i < p->argc; i++) {
    if (i) caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_json_string(b, p->argv[i]);
  }
  caml_memprof_buf_lit(b, "]");
  if (p->incomplete != NULL) {
    caml_memprof_buf_lit(b, ",\"incomplete\":");
    caml_memprof_buf_json_string(b, p->incomplete);
  }
  caml_memprof_buf_printf(b, ",\n\"config\":{\"rate\":%.17g,\"seed\":",
                          env->rate);
  if (env->seeded) {
    caml_memprof_buf_printf(b, "%llu", (unsigned long long)env->seed);
  } else {
    caml_memprof_buf_lit(b, "null");
  }
  caml_memprof_buf_printf(b, ",\"frames\":%ld", (long)env->frames);
  if (env->stacks_at_site) caml_memprof_buf_lit(b, ",\"stacks\":\"site\"");
#ifdef NATIVE_CODE
  else caml_memprof_buf_printf(b, ",\"stackmem\":%llu",
                               (unsigned long long)env->stackmem);
#endif
  caml_memprof_buf_printf(b, ",\"live\":\"%s\"",
                          caml_memprof_live_names[env->live]);
  if (env->stop != 0)
    caml_memprof_buf_printf(b, ",\"stop\":%llu",
                            (unsigned long long)env->stop);
  caml_memprof_buf_lit(b, ",\"peak\":\"events\"},\n");
  caml_memprof_buf_lit(b, "\"gc\":{");
  caml_memprof_buf_field(b, true, "minor_words", g->minor_words);
  caml_memprof_buf_field(b, false, "promoted_words", g->promoted_words);
  caml_memprof_buf_field(b, false, "major_words", g->major_words);
  caml_memprof_buf_field(b, false, "minor_collections", g->minor_collections);
  caml_memprof_buf_field(b, false, "major_collections", g->major_collections);
  caml_memprof_buf_field(b, false, "compactions", g->compactions);
  caml_memprof_buf_field(b, false, "heap_words", g->heap_words);
  caml_memprof_buf_field(b, false, "top_heap_words", g->top_heap_words);
  caml_memprof_buf_lit(b, "},\n");
  caml_memprof_buf_lit(b, "\"totals\":{");
  add_counts(b, p->totals, false);
  caml_memprof_buf_lit(b, "},\n\"frame_table\":[");
  for (size_t r = 0; r < so->ntexts; r++) {
    caml_memprof_buf_add(b, r ? ",\n" : "\n", r ? 2 : 1);
    caml_memprof_buf_add(b, so->texts[r].json, so->texts[r].len);
  }
  caml_memprof_buf_lit(b, "\n],\n\"stacks\":[");
  render_all_lines(b, so);
  caml_memprof_buf_lit(b, "\n]");
  if (!caml_memprof_points_render(b)) return false;
  if (!caml_memprof_budgets_render(b)) return false;
  if (p->snapshot != NULL && !caml_memprof_snapshot_render(b, p->snapshot, so))
    return false;
  caml_memprof_buf_lit(b, "}\n");
  return true;
}
