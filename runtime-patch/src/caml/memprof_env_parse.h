/* memprof-ci: the OCAMLMEMPROF syntax, parsed without the runtime.
 *
 * The parser (memprof_env_parse.c) uses the C library only, so that it
 * can be compiled on its own (runtime-patch/fuzz). memprof_env.c reads
 * the variable and reports errors for the runtime.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#ifndef CAML_MEMPROF_ENV_PARSE_H
#define CAML_MEMPROF_ENV_PARSE_H

#ifdef CAML_INTERNALS

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAML_MEMPROF_ENV_VAR "OCAMLMEMPROF"
#define CAML_MEMPROF_DEFAULT_FRAMES 16
#define CAML_MEMPROF_MAX_FRAMES 4096
#define CAML_MEMPROF_DEFAULT_OUT "memprof.%p.json"
#define CAML_MEMPROF_DEFAULT_STACKMEM ((uint64_t)256 << 10)
#define CAML_MEMPROF_DEFAULT_SNAPSHOT_SITES 20
#define CAML_MEMPROF_DEFAULT_SNAPSHOT_MEM ((uint64_t)1 << 30)
#define CAML_MEMPROF_DEFAULT_SNAPSHOT_OUT "memprof.%p.snap%n.json"
#define CAML_MEMPROF_MAX_SNAPSHOT_SITES 1000

/* Room for any error message: the parser shows at most
 * CAML_MEMPROF_ENV_ECHO_MAX characters of each piece of the setting it
 * echoes (then `...`), so a message always fits. */
#define CAML_MEMPROF_ENV_ECHO_MAX 256
#define CAML_MEMPROF_ENV_MSG_SIZE 1024

/* live=: walk (the default) decides live at exit by a walk of what the
 * roots reach, gc by two major cycles, off not at all. */
enum caml_memprof_live {
  CAML_MEMPROF_LIVE_WALK, CAML_MEMPROF_LIVE_GC, CAML_MEMPROF_LIVE_OFF
};
/* Their names, as live= takes them and the profile's config gives them. */
extern const char *const caml_memprof_live_names[3];

struct caml_memprof_env {
  bool seeded;          /* seed= given */
  uint64_t seed;
  bool tracking;        /* rate= given: the built-in tracker runs */
  double rate;          /* in (0, 1] when tracking */
  int frames;           /* 1 .. CAML_MEMPROF_MAX_FRAMES */
  const char *out;      /* output path template, %p = pid, %% = %;
                           NULL when trace= is given without out= */
  const char *trace;    /* CTF trace path template, or NULL */
  enum caml_memprof_live live; /* how live at exit is decided (live=) */
  bool points;          /* points=on: exact counts per allocation point */
  bool stacks_at_site;  /* stacks=site: each callstack is cut after its
                           innermost slot outside the standard library */
  uint64_t stackmem;    /* bytes of whole stacks kept (stackmem=) */
  bool snapshot_at_exit; /* snapshot=exit: retainer paths at exit */
  bool snapshot_on_signal; /* snapshot=signal: one on each SIGUSR1 */
  bool snapshot_on_call; /* snapshot=call: one on each program call */
  const char *snapshot_out; /* their path template, as out plus %n */
  int snapshot_sites;   /* snapshot_sites=: sites given a path */
  uint64_t snapshot_mem; /* snapshot_mem=: bytes of the snapshot's tables */
  uint64_t stop;        /* stop=: the run ends after this many minor
                           collections (memprof_stop.c); 0: it does not */
};

/* The defaults: no seed, no tracking. */
void caml_memprof_env_init(struct caml_memprof_env *env);

/* Parse `spec` (the value of OCAMLMEMPROF) into `env`, which must have
 * been initialised. `spec` is cut up in place and `env->out` may point
 * into it, so it must outlive `env`. Returns true on success; else
 * `env` is unspecified and `msg` (of `msg_size` bytes, at least
 * CAML_MEMPROF_ENV_MSG_SIZE for the message to be whole) holds one line
 * of printable ASCII without a newline, starting with OCAMLMEMPROF. */
bool caml_memprof_env_parse(char *spec, struct caml_memprof_env *env,
                            char *msg, size_t msg_size);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_ENV_PARSE_H */
