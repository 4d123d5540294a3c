/* memprof-ci: the output buffer of the built-in tracker, and JSON.
 *
 * 1. A buffer is either growable (sink NULL): a string in memory that
 *    doubles as needed; or streaming (sink set): a fixed window onto a
 *    file, flushed whenever full, so that a large profile is never
 *    built whole. Callers add pieces the same way to both.
 * 2. Invariants: `len < cap` whenever `s` is allocated, and `s[len]`
 *    is '\0' after every addition (a growable buffer is a C string).
 *    `err` is 0, or the errno of the first failure (ENOMEM, a write
 *    error, EINVAL for a printf piece over 127 bytes); once set, it
 *    stays, and nothing more is added or written. A streaming window
 *    is `cap` bytes the caller owns; a growable buffer's `s` belongs
 *    to the caller to free.
 * 3. The JSON helpers write exactly what the profile format
 *    (runtime-patch/format/profile-format.md) expects: unsigned
 *    decimals without vsnprintf, `"key":value` fields, and strings
 *    with `"` and `\` escaped and control bytes as \u00XX (other bytes,
 *    UTF-8 or not, copied as they are).
 * 4. Thread-safety: none needed; a buffer belongs to one thread, and
 *    nothing here keeps global state. Used at exit by
 *    memprof_frames.c, memprof_profile.c and memprof_outfile.c.
 * 5. The pieces of a large profile are millions of short strings: the
 *    fast path of an addition (caml_memprof_buf_add) and the digit
 *    conversion are inline here; the rest is memprof_jsonbuf.c.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_JSONBUF_H
#define CAML_MEMPROF_JSONBUF_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "misc.h"

struct caml_memprof_buf { char *s; size_t len, cap; int err; FILE *sink; };

/* An empty growable buffer. */
#define CAML_MEMPROF_BUF_INIT { NULL, 0, 0, 0, NULL }

/* Write out a streaming buffer's window (unless `err` is set) and
 * empty it. */
void caml_memprof_buf_flush(struct caml_memprof_buf *b);

/* caml_memprof_buf_add when the piece does not fit (or `err` is set):
 * flush or grow. */
void caml_memprof_buf_add_slow(struct caml_memprof_buf *b,
                               const char *s, size_t n);

/* Append the `n` bytes at `s`. */
Caml_inline void caml_memprof_buf_add(struct caml_memprof_buf *b,
                                      const char *s, size_t n)
{
  if (b->len + n + 1 <= b->cap && b->err == 0) {
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
  } else {
    caml_memprof_buf_add_slow(b, s, n);
  }
}

/* Append a string literal; its length is known at compile time. */
#define caml_memprof_buf_lit(b, lit) \
  caml_memprof_buf_add((b), (lit), sizeof(lit) - 1)

/* Append printf's output, which must fit in 127 bytes (else EINVAL). */
void caml_memprof_buf_printf(struct caml_memprof_buf *b,
                             const char *fmt, ...);

/* Decimal digits without vsnprintf (a profile has ten counters per
 * stack and tens of thousands of stacks at high rates): written at the
 * end of `tmp`, returning where they start. */
#define CAML_MEMPROF_UINT_DIGITS 24
Caml_inline char *caml_memprof_uint_digits(
  char tmp[CAML_MEMPROF_UINT_DIGITS], uintnat v)
{
  char *p = tmp + CAML_MEMPROF_UINT_DIGITS;
  do { *--p = (char)('0' + v % 10); v /= 10; } while (v != 0);
  return p;
}

/* Append `v` in decimal. */
void caml_memprof_buf_uint(struct caml_memprof_buf *b, uintnat v);

/* Append `v` in decimal, with its sign. */
void caml_memprof_buf_int(struct caml_memprof_buf *b, intnat v);

/* Append `,"key":v` (without the comma when `first`). */
void caml_memprof_buf_field(struct caml_memprof_buf *b, bool first,
                            const char *key, uintnat v);

/* Append `s` as a JSON string, or `null` when `s` is NULL. */
void caml_memprof_buf_json_string(struct caml_memprof_buf *b,
                                  const char *s);

/* Append the `n` bytes at `s` as a JSON string. */
void caml_memprof_buf_json_string_n(struct caml_memprof_buf *b,
                                    const char *s, size_t n);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_JSONBUF_H */
