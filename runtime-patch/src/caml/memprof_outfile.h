/* memprof-ci: where the built-in tracker's profile goes.
 *
 * 1. `out` of OCAMLMEMPROF, with %p, %% and %, expanded
 *    (caml_memprof_expand_out), names the destination;
 *    caml_memprof_write_out opens it as design 1 of memprof_outfile.c
 *    says (in place for a device or pipe, else a new temporary file
 *    renamed over it) and has a callback render the whole document
 *    into a streaming buffer (caml/memprof_jsonbuf.h) onto it. The
 *    destination only ever holds a complete profile, or (in place)
 *    whatever a failed write left.
 * 2. A document written as it goes: caml_memprof_out_create at the
 *    start, caml_memprof_out_commit at the end, on the same two paths.
 * 3. Thread-safety: no global state; each call is made once.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_OUTFILE_H
#define CAML_MEMPROF_OUTFILE_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include "memprof_jsonbuf.h"

/* `tmpl` with %p replaced by the pid and %% by %, malloc'd; NULL if
 * out of memory. */
char *caml_memprof_expand_out(const char *tmpl);

/* The same, and %n replaced by `n` (snapshot_out; the parser allows %n
 * in no other template). */
char *caml_memprof_expand_numbered(const char *tmpl, unsigned long n);

/* Renders a whole document into `b`; false when out of memory (other
 * failures are left in `b->err`). */
typedef bool (*caml_memprof_render_fn)(struct caml_memprof_buf *b,
                                       void *data);

/* Write what `render(b, data)` produces to `path`. Returns 0 or an
 * errno (the first failure: open, allocation, write, close, rename). */
int caml_memprof_write_out(const char *path, caml_memprof_render_fn render,
                           void *data);

/* Open `path` for a document written as it goes: in place (`*tmp`
 * NULL) or as a new temporary file (its malloc'd name in `*tmp`).
 * Returns 0 (`*fd` open) or an errno. */
int caml_memprof_out_create(const char *path, char **tmp, int *fd);

/* Keep one descriptor in reserve for the writes (memprof_outfile.c,
 * design 6); the tracker calls it at its start. */
void caml_memprof_out_reserve(void);

/* Close `fd` and, unless `err` or the close failed, rename `tmp` over
 * `path` (else remove it); frees `tmp`. Returns 0 or the first errno. */
int caml_memprof_out_commit(const char *path, char *tmp, int fd, int err);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_OUTFILE_H */
