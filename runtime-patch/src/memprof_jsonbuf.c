/* memprof-ci: the output buffer of the built-in tracker, and JSON.
 *
 * 1. The slow paths of the buffer declared in caml/memprof_jsonbuf.h
 *    (design there: growable or streaming, sticky `err`, '\0' after
 *    every addition), and the JSON helpers that are not on the
 *    per-piece fast path.
 * 2. Growing starts at 256 bytes and doubles; a streaming buffer
 *    flushes its window first, and a piece larger than the window is
 *    written directly. A failed write records errno (EIO when errno
 *    says nothing) and drops everything after it.
 * 3. No global state: callers on any thread, one buffer each.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_jsonbuf.h"

void caml_memprof_buf_flush(struct caml_memprof_buf *b)
{
  if (b->err == 0 && b->len > 0 && fwrite(b->s, 1, b->len, b->sink) != b->len) {
    b->err = errno ? errno : EIO;
  }
  b->len = 0;
}

void caml_memprof_buf_add_slow(struct caml_memprof_buf *b,
                               const char *s, size_t n)
{
  if (b->err) return;
  if (b->sink != NULL) {
    caml_memprof_buf_flush(b);
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

void caml_memprof_buf_printf(struct caml_memprof_buf *b, const char *fmt, ...)
{
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp) { if (!b->err) b->err = EINVAL; return; }
  caml_memprof_buf_add(b, tmp, n);
}

void caml_memprof_buf_uint(struct caml_memprof_buf *b, uintnat v)
{
  char tmp[CAML_MEMPROF_UINT_DIGITS];
  char *p = caml_memprof_uint_digits(tmp, v);
  caml_memprof_buf_add(b, p, tmp + CAML_MEMPROF_UINT_DIGITS - p);
}

void caml_memprof_buf_int(struct caml_memprof_buf *b, intnat v)
{
  if (v < 0) caml_memprof_buf_lit(b, "-");
  caml_memprof_buf_uint(b, v < 0 ? -(uintnat)v : (uintnat)v);
}

void caml_memprof_buf_field(struct caml_memprof_buf *b, bool first,
                            const char *key, uintnat v)
{
  if (!first) caml_memprof_buf_lit(b, ",");
  caml_memprof_buf_lit(b, "\"");
  caml_memprof_buf_add(b, key, strlen(key));
  caml_memprof_buf_lit(b, "\":");
  caml_memprof_buf_uint(b, v);
}

void caml_memprof_buf_json_string(struct caml_memprof_buf *b, const char *s)
{
  if (s == NULL) { caml_memprof_buf_lit(b, "null"); return; }
  caml_memprof_buf_json_string_n(b, s, strlen(s));
}

void caml_memprof_buf_json_string_n(struct caml_memprof_buf *b,
                                    const char *s, size_t n)
{
  caml_memprof_buf_lit(b, "\"");
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  for (;;) {
    /* The bytes up to the next one that needs escaping, at once. */
    const unsigned char *q = p;
    while (q < end && *q != '"' && *q != '\\' && *q >= 0x20) q++;
    if (q > p) caml_memprof_buf_add(b, (const char *)p, q - p);
    if (q == end) break;
    if (*q == '"' || *q == '\\') {
      char esc[2] = { '\\', (char)*q };
      caml_memprof_buf_add(b, esc, 2);
    } else {
      caml_memprof_buf_printf(b, "\\u%04x", *q);
    }
    p = q + 1;
  }
  caml_memprof_buf_lit(b, "\"");
}
