/* memprof-ci: the built-in tracker's memtrace trace (trace= of
 * OCAMLMEMPROF), written as memtrace's CTF format (memprof_ctf.c).
 *
 * 1. caml_memprof_ctf_open creates the trace when the tracker starts;
 *    the tracker's callbacks then report each sampled block's
 *    allocation, promotion and collection; caml_memprof_ctf_finish
 *    writes what is buffered and gives the file its final name.
 * 2. Thread-safety: the event calls may run on any domain, in
 *    parallel; each domain has its own writer state under its own
 *    lock, and whole packets go to the file under a shared lock.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_CTF_H
#define CAML_MEMPROF_CTF_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "backtrace_prim.h"

/* Create the trace at `tmpl` (%p expanded; a temporary name beside it
 * until finished) and write its trace-info packet; if it cannot be
 * created, print one line and exit with 2. */
void caml_memprof_ctf_start(const char *tmpl, double rate);

/* What memprof keeps for a traced block: the tracker's data for it
 * (its site) and the block's object id in the trace. */
struct caml_memprof_ctf_block {
  void *site;
  uint64_t id;
  struct caml_memprof_ctf_block *next;   /* on a free list */
};

/* A record for a new sample (reused from the thread's free list, else
 * malloc'd); NULL if out of memory. */
struct caml_memprof_ctf_block *caml_memprof_ctf_block(void);

/* Give a record back (NULL: nothing). */
void caml_memprof_ctf_block_free(struct caml_memprof_ctf_block *b);

/* Whether a trace is being written. */
bool caml_memprof_ctf_on(void);

/* An allocation of `wosize` words with `samples` samples (memprof's
 * source, young or not), its stack innermost first; returns the block's
 * object id. */
uint64_t caml_memprof_ctf_alloc(size_t wosize, size_t samples, int source,
                                bool young, const backtrace_slot *callstack,
                                size_t frames);

void caml_memprof_ctf_promote(struct caml_memprof_ctf_block *b);

/* The block's collection; its record is given back. */
void caml_memprof_ctf_collect(struct caml_memprof_ctf_block *b);

/* The current domain leaves statmemprof: flush its writer. */
void caml_memprof_ctf_domain_done(void);

/* Flush every domain's packet and rename the trace into place (once;
 * later events are dropped). Returns 0 or the first errno met. */
int caml_memprof_ctf_finish(void);

/* The trace's path (for messages). */
const char *caml_memprof_ctf_path(void);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_CTF_H */
