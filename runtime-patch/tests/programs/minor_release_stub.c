/* The atexit handler of minor_release.ml: after the runtime's exit (and
 * the tracker's profile), "free PAGES resident RESIDENT" on stderr for
 * the whole pages of the main domain's minor heap below young_ptr. */
#define CAML_INTERNALS
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <caml/mlvalues.h>
#include <caml/domain_state.h>

static caml_domain_state *main_domain;

static void report(void)
{
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = ((uintptr_t)main_domain->young_start + page - 1) & ~(page - 1);
  uintptr_t hi = (uintptr_t)main_domain->young_ptr & ~(page - 1);
  size_t pages = hi > lo ? (hi - lo) / page : 0, resident = 0;
  unsigned char *v = malloc(pages ? pages : 1);
  if (v != NULL && pages > 0 && mincore((void *)lo, hi - lo, v) == 0) {
    for (size_t i = 0; i < pages; i++) resident += v[i] & 1;
  }
  fprintf(stderr, "free %zu resident %zu\n", pages, resident);
  free(v);
}

value minor_release_arm(value unit)
{
  (void)unit;
  main_domain = Caml_state;
  atexit(report);
  return Val_unit;
}
