/* memprof-ci: the built-in tracker's profile document.
 *
 * 1. The tracker (memprof_tracker.c) counts samples per distinct raw
 *    callstack; at exit it hands the counts of every stack, the GC's
 *    totals and the program's argv to caml_memprof_render_profile,
 *    which resolves the stacks to source locations (memprof_frames.c),
 *    merges stacks that resolve alike, sorts them, and writes the JSON
 *    profile (runtime-patch/format/profile-format.md, version 2). The
 *    document depends on nothing else (not on the order of the stacks
 *    given, nor on addresses), so equal runs give equal bytes.
 * 2. Counters: one per kind below, in the order of the format's keys.
 *    COUNT_SAMPLES is not counted but derived here (minor + major +
 *    custom); the format's live_samples (samples - collected) too.
 *    COUNT_PEAK_LIVE is the tracker's snapshot at the peak.
 * 3. Thread-safety: none; called once, at exit, by one thread.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_PROFILE_H
#define CAML_MEMPROF_PROFILE_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stddef.h>
#include "backtrace_prim.h"
#include "memprof_jsonbuf.h"
#include "mlvalues.h"

enum {
  CAML_MEMPROF_COUNT_BLOCKS,          /* sampled blocks */
  CAML_MEMPROF_COUNT_SAMPLES,         /* derived: minor + major + custom */
  CAML_MEMPROF_COUNT_WORDS,           /* with headers; custom: out of heap */
  CAML_MEMPROF_COUNT_MINOR,           /* samples, by where they were */
  CAML_MEMPROF_COUNT_MAJOR,
  CAML_MEMPROF_COUNT_MARSHAL,         /* of which unmarshalled */
  CAML_MEMPROF_COUNT_CUSTOM,
  CAML_MEMPROF_COUNT_PROMOTED,        /* samples, by what became of them */
  CAML_MEMPROF_COUNT_COLLECTED,
  CAML_MEMPROF_COUNT_PEAK_LIVE,       /* samples live at the peak */
  CAML_MEMPROF_N_COUNTS
};

/* One distinct raw callstack (innermost first) and its counts. */
struct caml_memprof_stack {
  const backtrace_slot *slots;
  size_t nslots;
  uintnat count[CAML_MEMPROF_N_COUNTS];
};

/* The profile's "gc" object. */
struct caml_memprof_gc_totals {
  uintnat minor_words, promoted_words, major_words,
          minor_collections, major_collections, compactions,
          heap_words, top_heap_words;
};

/* The GC's totals now: exact for this domain and for terminated ones;
 * other running domains count as of their last collection (cf.
 * caml_do_exit in sys.c). */
struct caml_memprof_gc_totals caml_memprof_read_gc_totals(void);

/* Everything the document says besides the OCAMLMEMPROF setting
 * (read with caml_memprof_env()). */
struct caml_memprof_profile {
  const struct caml_memprof_stack *stacks;
  size_t nstacks;
  const struct caml_memprof_gc_totals *gc;
  char *const *argv;                  /* argc strings; one that could not
                                         be copied is NULL (shown null) */
  size_t argc;
  const char *incomplete;             /* why the run ended abnormally,
                                         or NULL (memprof_tracker.h) */
};

/* Render the profile into `b`; false when out of memory. */
bool caml_memprof_render_profile(struct caml_memprof_buf *b,
                                 const struct caml_memprof_profile *p);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_PROFILE_H */
