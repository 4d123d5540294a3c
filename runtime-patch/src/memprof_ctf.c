/* memprof-ci: the built-in tracker's memtrace trace (trace= of
 * OCAMLMEMPROF).
 *
 * 1. The file is memtrace's CTF format, version 3, as its reader
 *    (github:janestreet/memtrace src/trace.ml) reads it: a first packet
 *    holding the trace-info event alone, then packets of location,
 *    alloc, promote and collect events. A packet is a 68-byte header
 *    (magic, size in bits, first and last timestamp in microseconds
 *    since the epoch, format version, pid, domain id, a check of the
 *    backtrace cache, first and last-plus-one object id) and at most
 *    32 KiB in all; an event is a 32-bit word (7-bit event code, low 25
 *    bits of its timestamp) and its fields (memprof_ctf_codec.c).
 * 2. One writer per domain (Caml_state->id), made on the domain's first
 *    event: its own packet buffer, backtrace cache, location coder and
 *    last stack, so the reader's per-domain state follows each stream.
 *    The callbacks of a domain run on that domain (never nested: the
 *    writer allocates nothing on the OCaml heap, which would be
 *    sampled and come back to the writer while it holds its lock; in
 *    bytecode the first lookup of a location reads the executable's
 *    debug information onto the heap, so the trace's start reads it,
 *    before any sample); the writer's spin lock, free of cost when
 *    uncontended, only guards against the exiting thread flushing it
 *    meanwhile.
 * 3. A packet is flushed when it may not hold another event, when more
 *    than 128 slots await their location events, when its first
 *    timestamp is 30 s old (the 25-bit timestamps must not wrap), or
 *    when the domain's block of object ids is used up. A flush writes
 *    the awaited locations first, in packets of their own, then the
 *    events; a whole packet is one write under the file lock. Memory
 *    is bounded: a packet, the cache, and at most 128 + frames
 *    awaited slots per domain.
 * 4. A terminating domain flushes its writer once its last events are
 *    written (caml_memprof_ctf_domain_done, from memprof.c when the
 *    domain leaves statmemprof): the blocks it leaves are collected by
 *    another domain, and those collect events must come after their
 *    allocation in the file. A later domain with the same id carries
 *    on with the writer.
 * 5. Object ids are global: each domain takes blocks of 10000 from a
 *    shared counter; promote and collect events give the distance from
 *    the domain's last id. Timestamps never go back within a domain.
 * 6. The file is a temporary one beside the destination, created with
 *    O_EXCL|O_NOFOLLOW (memprof_outfile.c), renamed into place by
 *    caml_memprof_ctf_finish. A forked child writes nothing and leaves
 *    the file to its parent. Blocks alive at the end get no collect.
 * 7. The record memprof keeps for a traced block (its site for the
 *    tracker, its object id) comes from, and goes back to, a free list
 *    per thread: records are malloc'd only up to the most blocks ever
 *    followed at once, and no sample pays malloc and free.
 * 8. One file holds the writer and its state, private to it (about
 *    400 lines): the encoders are in memprof_ctf_codec.c.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "caml/mlvalues.h"
#include "caml/backtrace_prim.h"
#include "caml/camlatomic.h"
#include "caml/domain_state.h"
#include "caml/memprof.h"
#include "caml/memprof_ctf.h"
#include "caml/memprof_env_parse.h"
#include "caml/memprof_ctf_codec.h"
#include "caml/memprof_outfile.h"
#include "caml/memprof_tracker.h"
#include "caml/platform.h"
#include "caml/startup_aux.h"
#ifndef NATIVE_CODE
#include "caml/fix_code.h"
#endif

#define PKT_SIZE ((size_t)1 << 15)
#define HDR_SIZE 68
#define MAX_EVENT (100 + CAML_CTF_BT_MAX_BYTES)
#define MAX_AWAITED 128
#define IDS_PER_BLOCK 10000
#define PACKET_MAX_US (30 * 1000000ull)
#define VERSION 3
enum { EV_INFO = 0, EV_LOCATION = 1, EV_ALLOC = 2, EV_PROMOTE = 3,
       EV_COLLECT = 4, EV_SHORT_ALLOC = 100 };

struct dom {
  atomic_uintnat busy;                 /* a spin lock (design 2) */
  uint16_t id;
  struct caml_ctf_buf pkt;
  uint64_t t_begin, t_end, id_start, id_next, id_last;
  unsigned char *locbuf;               /* location packets */
  backtrace_slot *last, *awaited;
  size_t last_n, last_cap, n_awaited, awaited_cap;
  struct caml_ctf_bt_cache cache;
  struct caml_ctf_mtf mtf;
};

static struct {
  int fd, err;
  char *path, *tmp;
  pid_t pid;
  uint64_t start;
  atomic_uintnat on, closed;
  atomic_uintnat next_ids;
  caml_plat_mutex file_lock, doms_lock;
  size_t ndoms;
  _Atomic(struct dom *) *doms;
} T = { -1, 0, NULL, NULL, 0, 0, 0, 0, 0, CAML_PLAT_MUTEX_INITIALIZER,
        CAML_PLAT_MUTEX_INITIALIZER, 0, NULL };

static uint64_t now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/**** Packets ****/

static void begin_packet(struct caml_ctf_buf *w, uint16_t dom,
                         struct caml_ctf_bt_cache *cache)
{
  w->pos = 0;
  caml_ctf_put32(w, 0xc1fc1fc1u);
  caml_ctf_put32(w, 0);                 /* size, set when finished */
  caml_ctf_put64(w, 0);
  caml_ctf_put64(w, 0);
  caml_ctf_put32(w, 0);                 /* flush duration */
  caml_ctf_put16(w, VERSION);
  caml_ctf_put64(w, (uint64_t)T.pid);
  caml_ctf_put16(w, dom);
  caml_ctf_put_verifier(cache, w);
  caml_ctf_put64(w, 0);
  caml_ctf_put64(w, 0);
}

static void write_packet(struct caml_ctf_buf *w, uint64_t t0, uint64_t t1,
                         uint64_t id0, uint64_t id1)
{
  caml_ctf_set32(w, 4, (uint32_t)(w->pos * 8));
  caml_ctf_set64(w, 8, t0);
  caml_ctf_set64(w, 16, t1);
  caml_ctf_set64(w, 52, id0);
  caml_ctf_set64(w, 60, id1);
  if (getpid() != T.pid) return;
  caml_plat_lock_blocking(&T.file_lock);
  for (size_t off = 0; off < w->pos && T.err == 0;) {
    ssize_t k = write(T.fd, w->b + off, w->pos - off);
    if (k < 0 && errno != EINTR) T.err = errno;
    if (k > 0) off += (size_t)k;
  }
  caml_plat_unlock(&T.file_lock);
}

static void put_event_header(struct caml_ctf_buf *w, unsigned code,
                             uint64_t t)
{
  caml_ctf_put32(w, (uint32_t)code << 25 | ((uint32_t)t & 0x1ffffff));
}

/* Design 3: the awaited locations, then the events. */
static void flush(struct dom *d, uint64_t now)
{
  struct caml_ctf_buf w = { d->locbuf, 0, PKT_SIZE };
  for (size_t i = 0; i < d->n_awaited;) {
    begin_packet(&w, d->id, NULL);
    while (i < d->n_awaited && w.cap - w.pos > CAML_CTF_LOC_MAX_BYTES + 4) {
      size_t at = w.pos;
      put_event_header(&w, EV_LOCATION, d->t_begin);
      if (!caml_ctf_put_location(&d->mtf, &w, d->awaited[i])) w.pos = at;
      i++;
    }
    write_packet(&w, d->t_begin, d->t_begin, d->id_start, d->id_start);
  }
  d->n_awaited = 0;
  write_packet(&d->pkt, d->t_begin, d->t_end, d->id_start, d->id_next);
  d->t_begin = d->t_end = now;
  if (d->id_next == d->id_last) {
    d->id_next = atomic_fetch_add(&T.next_ids, IDS_PER_BLOCK);
    d->id_last = d->id_next + IDS_PER_BLOCK;
  }
  d->id_start = d->id_next;
  begin_packet(&d->pkt, d->id, &d->cache);
}

static void begin_event(struct dom *d, unsigned code)
{
  uint64_t now = now_us();
  if (now < d->t_end) now = d->t_end;
  if (d->pkt.cap - d->pkt.pos < MAX_EVENT || d->n_awaited > MAX_AWAITED
      || now - d->t_begin > PACKET_MAX_US || d->id_next == d->id_last) {
    flush(d, now);
  }
  d->t_end = now;
  put_event_header(&d->pkt, code, now);
}

/**** Writers ****/

static struct dom *new_dom(uint16_t id)
{
  struct dom *d = calloc(1, sizeof *d);
  unsigned char *b = malloc(PKT_SIZE), *lb = malloc(PKT_SIZE);
  if (d == NULL || b == NULL || lb == NULL) {
    free(d); free(b); free(lb);
    return NULL;
  }
  d->locbuf = lb;
  d->id = id;
  d->pkt = (struct caml_ctf_buf){ b, 0, PKT_SIZE };
  d->t_begin = d->t_end = T.start;
  d->id_next = d->id_start = atomic_fetch_add(&T.next_ids, IDS_PER_BLOCK);
  d->id_last = d->id_next + IDS_PER_BLOCK;
  d->cache.verify_ix = 4242;
  begin_packet(&d->pkt, id, NULL);
  return d;
}

static void spin_lock(struct dom *d)
{
  while (atomic_exchange_explicit(&d->busy, 1, memory_order_acquire)) {
    cpu_relax();
  }
}

static void unlock_dom(struct dom *d)
{
  atomic_store_explicit(&d->busy, 0, memory_order_release);
}

/* This domain's writer, locked; NULL when the trace is finished or out
 * of memory. */
static struct dom *lock_dom(void)
{
  size_t id = (size_t)Caml_state->id;
  if (id >= T.ndoms || atomic_load_relaxed(&T.closed)) return NULL;
  struct dom *d = atomic_load_acquire(&T.doms[id]);
  if (d == NULL) {
    caml_plat_lock_blocking(&T.doms_lock);
    d = atomic_load_relaxed(&T.doms[id]);
    if (d == NULL && (d = new_dom((uint16_t)id)) != NULL) {
      atomic_store_release(&T.doms[id], d);
    }
    caml_plat_unlock(&T.doms_lock);
    if (d == NULL) return NULL;
  }
  spin_lock(d);
  if (atomic_load_relaxed(&T.closed)) { unlock_dom(d); return NULL; }
  return d;
}

void caml_memprof_ctf_domain_done(void)
{
  size_t id = (size_t)Caml_state->id;
  if (!caml_memprof_ctf_on() || id >= T.ndoms
      || atomic_load_acquire(&T.doms[id]) == NULL) return;
  struct dom *d = lock_dom();
  if (d == NULL) return;
  flush(d, d->t_end);
  unlock_dom(d);
}

static void await_location(void *arg, backtrace_slot slot)
{
  struct dom *d = arg;
  if (d->n_awaited == d->awaited_cap) {
    size_t cap = d->awaited_cap ? 2 * d->awaited_cap : 256;
    backtrace_slot *a = realloc(d->awaited, cap * sizeof *a);
    if (a == NULL) return;         /* the slot stays without location */
    d->awaited = a;
    d->awaited_cap = cap;
  }
  d->awaited[d->n_awaited++] = slot;
}

/**** Events ****/

bool caml_memprof_ctf_on(void)
{
  return atomic_load_relaxed(&T.on) != 0;
}

/* How many outermost slots `cs` shares with the domain's last stack,
 * which then becomes `cs`. */
static size_t shared_outer(struct dom *d, const backtrace_slot *cs, size_t n)
{
  size_t k = 0;
  while (k < n && k < d->last_n && cs[n - 1 - k] == d->last[d->last_n - 1 - k])
    k++;
  if (n > d->last_cap) {
    backtrace_slot *l = realloc(d->last, n * sizeof *l);
    if (l == NULL) { d->last_n = 0; return 0; }  /* nothing shared next */
    d->last = l;
    d->last_cap = n;
  }
  memcpy(d->last, cs, n * sizeof *cs);
  d->last_n = n;
  return k;
}

/* memtrace's allocation sources. */
enum { SRC_MINOR = 0, SRC_MAJOR = 1, SRC_EXTERNAL = 2 };

uint64_t caml_memprof_ctf_alloc(size_t wosize, size_t samples, int msrc,
                                bool young, const backtrace_slot *cs,
                                size_t frames)
{
  int source = caml_memprof_src_out_of_heap(msrc) ? SRC_EXTERNAL
    : young ? SRC_MINOR : SRC_MAJOR;
  struct dom *d = lock_dom();
  if (d == NULL) return 0;
  size_t common = shared_outer(d, cs, frames), fresh = frames - common;
  bool is_short = wosize >= 1 && wosize <= 16 && samples == 1
    && source == SRC_MINOR && fresh < 256;
  begin_event(d, is_short ? EV_SHORT_ALLOC + (unsigned)wosize : EV_ALLOC);
  uint64_t id = d->id_next++;
  struct caml_ctf_buf *w = &d->pkt;
  if (!is_short) {
    caml_ctf_put_vint(w, (int64_t)wosize);
    caml_ctf_put_vint(w, (int64_t)samples);
    caml_ctf_put8(w, (unsigned)source);
  }
  caml_ctf_put_vint(w, (int64_t)common);
  size_t at = w->pos;
  w->pos += is_short ? 1 : 2;
  size_t n = caml_ctf_put_backtrace(&d->cache, w, id, cs, fresh,
                                    await_location, d);
  size_t end = w->pos;
  w->pos = at;
  if (is_short) caml_ctf_put8(w, (unsigned)n);
  else caml_ctf_put16(w, (unsigned)n);
  w->pos = end;
  unlock_dom(d);
  return id;
}

static void put_relative(unsigned code, uint64_t id)
{
  struct dom *d = lock_dom();
  if (d == NULL) return;
  begin_event(d, code);
  caml_ctf_put_vint(&d->pkt, (int64_t)(d->id_next - 1 - id));
  unlock_dom(d);
}

void caml_memprof_ctf_promote(struct caml_memprof_ctf_block *b)
{
  put_relative(EV_PROMOTE, b->id);
}

void caml_memprof_ctf_collect(struct caml_memprof_ctf_block *b)
{
  put_relative(EV_COLLECT, b->id);
  caml_memprof_ctf_block_free(b);
}

/* Design 7. */
static CAMLthread_local struct caml_memprof_ctf_block *free_blocks = NULL;

struct caml_memprof_ctf_block *caml_memprof_ctf_block(void)
{
  struct caml_memprof_ctf_block *b = free_blocks;
  if (b == NULL) return malloc(sizeof *b);
  free_blocks = b->next;
  return b;
}

void caml_memprof_ctf_block_free(struct caml_memprof_ctf_block *b)
{
  if (b == NULL) return;
  b->next = free_blocks;
  free_blocks = b;
}

/**** The file ****/

/* A string of at most 1000 bytes of `s` (the packet has room). */
static void put_short_string(struct caml_ctf_buf *w, const char *s)
{
  size_t n = s ? strnlen(s, 1000) : 0;
  memcpy(w->b + w->pos, s ? s : "", n);
  w->pos += n;
  caml_ctf_put8(w, 0);
}

static void write_info(double rate, const char *executable)
{
  unsigned char buf[8192];
  struct caml_ctf_buf w = { buf, 0, sizeof buf };
  char host[1024] = "";
  gethostname(host, sizeof host - 1);
  const char *params = getenv("OCAMLRUNPARAM");
  if (params == NULL) params = getenv("CAMLRUNPARAM");
  uint64_t bits;
  memcpy(&bits, &rate, sizeof bits);
  begin_packet(&w, (uint16_t)Caml_state->id, NULL);
  put_event_header(&w, EV_INFO, T.start);
  caml_ctf_put64(&w, bits);
  caml_ctf_put8(&w, 8 * sizeof(value));     /* bits, as Sys.word_size */
  put_short_string(&w, executable);
  put_short_string(&w, host);
  put_short_string(&w, params);
  caml_ctf_put64(&w, (uint64_t)T.pid);
  put_short_string(&w, getenv("OCAMLMEMPROF"));     /* the context */
  write_packet(&w, T.start, T.start, 0, 0);
}

static int open_trace(const char *path, double rate, const char *executable)
{
  T.ndoms = caml_params->max_domains;
  T.doms = calloc(T.ndoms, sizeof *T.doms);
  T.path = strdup(path);
  if (T.doms == NULL || T.path == NULL) return ENOMEM;
  int err = caml_memprof_out_create(T.path, &T.tmp, &T.fd);
  if (err != 0) return err;
  T.pid = getpid();
  T.start = now_us();
  write_info(rate, executable);
  atomic_store_release(&T.on, 1);
  return 0;
}

void caml_memprof_ctf_start(const char *tmpl, double rate)
{
  char *path = caml_memprof_expand_out(tmpl);
  const char *exe = caml_params->exe_name;   /* Sys.executable_name */
  int err = path == NULL ? ENOMEM : open_trace(path, rate, exe ? exe : "");
  if (err != 0) {
    fprintf(stderr, "%s: cannot create the trace '%s': %s\n",
            CAML_MEMPROF_ENV_VAR, path ? path : tmpl, strerror(err));
    exit(2);
  }
  free(path);
#ifndef NATIVE_CODE
  /* Design 2: read the debug information now (a lookup does). */
  struct caml_loc_info li;
  caml_debuginfo_location(
    caml_debuginfo_extract((backtrace_slot)caml_start_code), &li);
#endif
}

const char *caml_memprof_ctf_path(void) { return T.path; }

int caml_memprof_ctf_finish(void)
{
  if (!caml_memprof_ctf_on() || atomic_exchange(&T.closed, 1)) return 0;
  if (getpid() != T.pid) { close(T.fd); return 0; }
  for (size_t i = 0; i < T.ndoms; i++) {
    struct dom *d = atomic_load_acquire(&T.doms[i]);
    if (d == NULL) continue;
    spin_lock(d);
    flush(d, d->t_end);
    unlock_dom(d);
  }
  return caml_memprof_out_commit(T.path, T.tmp, T.fd, T.err);
}
