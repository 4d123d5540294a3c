/* memprof-ci: the heap snapshot at exit (OCAMLMEMPROF snapshot=exit).
 *
 * 1. caml_memprof_snapshot_judge walks the heap breadth first from the
 *    roots (memprof_snapshot.c, design there), judges the tracked
 *    blocks by what it reached, as caml_memprof_judge_by_reachability
 *    would, and keeps what the retainer paths need. `*judged` says
 *    whether it judged; when not, the caller judges another way. It
 *    always returns a snapshot to render: one not taken says why.
 * 2. caml_memprof_snapshot_render writes the profile's `snapshot`
 *    section (with its leading comma), naming sites by the frames of
 *    the profile's sorted stacks. The heap must not have changed since
 *    the judgment (nothing runs between them at exit).
 * 3. Thread-safety: all at exit, on the exiting thread, which is the
 *    only one running OCaml; a snapshot on demand is an exit in a
 *    forked copy of the program.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_SNAPSHOT_H
#define CAML_MEMPROF_SNAPSHOT_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include "memprof_jsonbuf.h"
#include "memprof_profile.h"

struct caml_memprof_snapshot;

struct caml_memprof_snapshot *caml_memprof_snapshot_judge(bool *judged);

bool caml_memprof_snapshot_render(struct caml_memprof_buf *b,
                                  struct caml_memprof_snapshot *s,
                                  const struct caml_memprof_sorted *so);

void caml_memprof_snapshot_free(struct caml_memprof_snapshot *s);

/* What the rendered section's `at` says: "exit" unless set, else
 * "signal" or "call" (in a snapshot's child, memprof_tracker.c design
 * 10). `at` must outlive the rendering. */
void caml_memprof_snapshot_taken_at(const char *at);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_SNAPSHOT_H */
