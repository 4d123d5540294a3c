/* memprof-ci: the built-in tracker's profile document.
 *
 * 1. The tracker (memprof_tracker.c) counts samples per distinct raw
 *    callstack. At exit it has the stacks sorted
 *    (caml_memprof_sorting_*: each resolved to source locations with
 *    memprof_frames.c as it is given, then all ordered by them), which
 *    needs only their slots, and then hands the sorted stacks, the sums of their counts,
 *    the GC's totals and the program's argv to
 *    caml_memprof_render_profile, which reads the counts, merges stacks
 *    that resolve alike and writes the JSON profile
 *    (runtime-patch/format/profile-format.md, version 3). The document
 *    depends on nothing else (not on the order of the stacks given, nor
 *    on addresses), so equal runs give equal bytes.
 * 2. Counters: one per kind below, in the order of the format's keys.
 *    COUNT_SAMPLES is not counted but derived here (minor + major +
 *    custom); the format's live_samples (samples - collected) too.
 *    COUNT_PEAK_LIVE is the tracker's snapshot at the peak.
 * 3. Thread-safety: called once each, at exit. Sorting touches no
 *    counter and, in native code, nothing of the OCaml heap (design 4
 *    of caml/memprof_frames.h), so it may run on a thread of its own
 *    while the exit's judgment of reachability still moves counters;
 *    rendering must come after both, and renders the second half of
 *    the stack lines on a thread of its own (memprof_profile.c).
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_PROFILE_H
#define CAML_MEMPROF_PROFILE_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stddef.h>
#ifndef _WIN32
#include <pthread.h>
#endif
#include "backtrace_prim.h"
#include "camlatomic.h"
#include "memprof_jsonbuf.h"
#include "mlvalues.h"

struct caml_memprof_snapshot;

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

/* Stacks being given (opaque): each distinct raw callstack is handed
 * over once, and resolved then, while its slots are in cache. */
struct caml_memprof_sorting;

/* Stacks resolved and sorted (opaque). */
struct caml_memprof_sorted;

/* Start a sorting with room for `nstacks` stacks of `nslots` slots in
 * all (a hint; more may come); NULL when out of memory. */
struct caml_memprof_sorting *
caml_memprof_sorting_start(size_t nstacks, size_t nslots);

/* Give one stack: its slots (innermost first), its counters
 * (CAML_MEMPROF_N_COUNTS of them; COUNT_SAMPLES is not read), which
 * must outlive the result, and whether it was cut past the stack
 * budget (its line then says "cut"); only the slots are read here.
 * False when out of memory, which fails the sorting. */
bool caml_memprof_sorting_add(struct caml_memprof_sorting *s,
                              const backtrace_slot *slots, size_t nslots,
                              const atomic_uintnat *count, bool cut);

/* Rank the frames and sort the stacks given; frees `s`. NULL when out
 * of memory (or `s` is NULL). */
struct caml_memprof_sorted *
caml_memprof_sorting_end(struct caml_memprof_sorting *s);

void caml_memprof_sorted_free(struct caml_memprof_sorted *so);

/* The sorted stacks one by one, for the snapshot (memprof_snapshot.h):
 * how many; the counters of the `i`th (and its frame ranks, when
 * `ranks` is not NULL); whether the `i`th and `j`th resolve alike (so
 * are one line of the profile). */
size_t caml_memprof_sorted_size(const struct caml_memprof_sorted *so);
const atomic_uintnat *caml_memprof_sorted_stack(
  const struct caml_memprof_sorted *so, size_t i,
  const uint32_t **ranks, size_t *n);
bool caml_memprof_sorted_same(const struct caml_memprof_sorted *so,
                              size_t i, size_t j);

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

/* Work run beside the calling thread: on a thread of its own, with
 * every signal blocked, when asked and possible, else by the join. */
struct caml_memprof_beside {
  void *(*fn)(void *);
  void *arg;
  bool started;
#ifndef _WIN32
  pthread_t thread;
#endif
};

/* Start `fn(arg)` beside the caller (`on_thread`) or leave it to the
 * join (not `on_thread`, or no thread could be created). */
void caml_memprof_beside_start(struct caml_memprof_beside *w,
                               void *(*fn)(void *), void *arg,
                               bool on_thread);

/* Wait for the work, or do it now if it has not started. */
void caml_memprof_beside_join(struct caml_memprof_beside *w);

/* Everything the document says besides the OCAMLMEMPROF setting
 * (read with caml_memprof_env()). */
struct caml_memprof_profile {
  const struct caml_memprof_sorted *sorted;
  const uintnat *totals;              /* the sums of the stacks' counts,
                                         COUNT_SAMPLES derived */
  const struct caml_memprof_gc_totals *gc;
  char *const *argv;                  /* argc strings; one that could not
                                         be copied is NULL (shown null) */
  size_t argc;
  const char *incomplete;             /* why the run ended abnormally,
                                         or NULL (memprof_tracker.h) */
  struct caml_memprof_snapshot *snapshot;  /* snapshot=exit, else NULL */
};

/* Render the profile into `b`; false when out of memory. */
bool caml_memprof_render_profile(struct caml_memprof_buf *b,
                                 const struct caml_memprof_profile *p);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_PROFILE_H */
