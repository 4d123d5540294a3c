/* memprof-ci: the encoders inside memtrace's CTF events
 * (memprof_ctf_codec.c), used by the trace writer memprof_ctf.c.
 *
 * 1. A packet buffer with little-endian writers and memtrace's vint.
 * 2. Backtraces: memtrace's 2^14-slot cache with prediction; the
 *    reader rebuilds the same cache from the codes written, so one
 *    cache serves one stream of packets (one domain).
 * 3. Locations: a slot's source locations, outermost first, with the
 *    file and function names move-to-front coded per stream.
 * 4. Thread-safety: none; each state belongs to one domain's writer,
 *    used under that writer's lock.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_CTF_CODEC_H
#define CAML_MEMPROF_CTF_CODEC_H

#ifdef CAML_INTERNALS

#include <stddef.h>
#include <stdint.h>
#include "backtrace_prim.h"
#include "misc.h"

struct caml_ctf_buf { unsigned char *b; size_t pos, cap; };

Caml_inline void caml_ctf_put8(struct caml_ctf_buf *w, unsigned v)
{ w->b[w->pos++] = (unsigned char)v; }

Caml_inline void caml_ctf_put16(struct caml_ctf_buf *w, unsigned v)
{ caml_ctf_put8(w, v & 0xff); caml_ctf_put8(w, (v >> 8) & 0xff); }

Caml_inline void caml_ctf_put32(struct caml_ctf_buf *w, uint32_t v)
{ caml_ctf_put16(w, v & 0xffff); caml_ctf_put16(w, v >> 16); }

Caml_inline void caml_ctf_put64(struct caml_ctf_buf *w, uint64_t v)
{ caml_ctf_put32(w, (uint32_t)v); caml_ctf_put32(w, (uint32_t)(v >> 32)); }

Caml_inline void caml_ctf_set32(struct caml_ctf_buf *w, size_t at, uint32_t v)
{ size_t p = w->pos; w->pos = at; caml_ctf_put32(w, v); w->pos = p; }

Caml_inline void caml_ctf_set64(struct caml_ctf_buf *w, size_t at, uint64_t v)
{ size_t p = w->pos; w->pos = at; caml_ctf_put64(w, v); w->pos = p; }

/* memtrace's vint of a signed value: one byte for 0..252, else a tag
 * byte (253, 254, 255) and 2, 4 or 8 bytes. */
void caml_ctf_put_vint(struct caml_ctf_buf *w, int64_t v);

/* A NUL-terminated string. */
void caml_ctf_put_string(struct caml_ctf_buf *w, const char *s);

#define CAML_CTF_CACHE_BITS 14
#define CAML_CTF_CACHE_SIZE (1 << CAML_CTF_CACHE_BITS)
#define CAML_CTF_BT_MAX_BYTES 4096    /* one backtrace's codes at most */
#define CAML_CTF_LOC_MAX_BYTES 4096   /* one location event at most */

struct caml_ctf_bt_cache {
  uint64_t slot[CAML_CTF_CACHE_SIZE];
  uint64_t date[CAML_CTF_CACHE_SIZE];   /* object id of the last use */
  uint16_t next[CAML_CTF_CACHE_SIZE];   /* prediction: the bucket that
                                           followed last time */
  uint16_t verify_ix;
};

/* Called for each slot that misses the cache: its locations must be
 * written before the packet that uses it. */
typedef void (*caml_ctf_miss_fn)(void *arg, backtrace_slot slot);

/* Encode `cs[0 .. n-1]` (innermost first), outermost first, into `w`;
 * returns the number of codes written. Stops early, as memtrace's
 * writer does, past CAML_CTF_BT_MAX_BYTES. */
size_t caml_ctf_put_backtrace(struct caml_ctf_bt_cache *c,
                              struct caml_ctf_buf *w, uint64_t alloc_id,
                              const backtrace_slot *cs, size_t n,
                              caml_ctf_miss_fn miss, void *arg);

/* The packet header's check of the cache (NULL: the dummy check). */
void caml_ctf_put_verifier(struct caml_ctf_bt_cache *c,
                           struct caml_ctf_buf *w);

/* Move-to-front tables of file names, each with its function names. */
#define CAML_CTF_MTF 31
struct caml_ctf_mtf_file { char *name; char *defs[CAML_CTF_MTF]; };
struct caml_ctf_mtf { struct caml_ctf_mtf_file *files[CAML_CTF_MTF]; };

/* The body of a location event for `slot`, at most
 * CAML_CTF_LOC_MAX_BYTES; false if out of memory (nothing written). */
int caml_ctf_put_location(struct caml_ctf_mtf *m, struct caml_ctf_buf *w,
                          backtrace_slot slot);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_CTF_CODEC_H */
