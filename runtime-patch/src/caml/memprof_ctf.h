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

/* memtrace's allocation sources. */
enum { CAML_MEMPROF_CTF_MINOR = 0, CAML_MEMPROF_CTF_MAJOR = 1,
       CAML_MEMPROF_CTF_EXTERNAL = 2 };

/* Create the trace at `path` (a temporary name beside it until
 * finished) and write its trace-info packet. Returns 0 or an errno. */
int caml_memprof_ctf_open(const char *path, double rate,
                          const char *executable);

/* Whether a trace is being written. */
bool caml_memprof_ctf_on(void);

/* An allocation of `wosize` words with `samples` samples, its stack
 * innermost first; returns the block's object id. */
uint64_t caml_memprof_ctf_alloc(size_t wosize, size_t samples, int source,
                                const backtrace_slot *callstack,
                                size_t frames);

void caml_memprof_ctf_promote(uint64_t id);
void caml_memprof_ctf_collect(uint64_t id);

/* The current domain leaves statmemprof: flush its writer. */
void caml_memprof_ctf_domain_done(void);

/* Flush every domain's packet and rename the trace into place (once;
 * later events are dropped). Returns 0 or the first errno met. */
int caml_memprof_ctf_finish(void);

/* The path given to caml_memprof_ctf_open (for messages). */
const char *caml_memprof_ctf_path(void);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_CTF_H */
