/* memprof-ci: exact, inclusive counts per call of the functions annotated
 * with an allocation budget ([@zero_alloc], [@memprof.words_per_call N]),
 * and of those named in OCAMLMEMPROF_COUNT when they were compiled.
 *
 * 1. What the compiler emits. In native code, translcore.ml turns the
 *    body b of an annotated function into
 *      let t = caml_memprof_budget_enter DESC in
 *      let r = try b with e -> caml_memprof_budget_leave t; raise e in
 *      caml_memprof_budget_leave t; r
 *    where DESC is a static string constant,
 *    "FILE\tFUNCTION\tLINE\tATTRIBUTE\tLIMIT". A call is therefore
 *    counted when it returns or raises; the function's own tail calls
 *    become ordinary calls. A function named in OCAMLMEMPROF_COUNT at
 *    compile time, without an annotation, gets the same bracket with
 *    ATTRIBUTE "counted" and LIMIT 0 (this file treats every ATTRIBUTE
 *    alike). Other functions are compiled as upstream compiles them and
 *    cost nothing here.
 * 2. Words. Both primitives are ordinary externals (not noalloc), so the
 *    switch to C has saved the domain's allocation pointer and the
 *    domain's counters are exact: the words it has allocated are its
 *    minor words (as Gc.minor_words counts them) plus the words it
 *    allocated directly in the major heap (the major words less the
 *    promoted ones). A call's words are the difference between its
 *    leave and its enter: everything the domain allocated meanwhile, in
 *    its callees and in C included, and, with systhreads, by the
 *    domain's other threads while the call was active.
 * 3. The token `enter` returns, an OCaml int, carries the words at entry
 *    (modulo 2^40: no call allocates 8 TiB), the function's slot and the
 *    entering domain's index. `leave` counts the call into the slot
 *    only on that domain; a call that an effect handler resumed on
 *    another domain counts as `other_domain_calls`, without words.
 *    Nothing is kept per active call, so a recursive call counts on its
 *    own (its words also count in its caller's), and a call whose
 *    continuation is dropped is simply never counted. Without the
 *    tracker on (`start` not called), `enter` returns -1 and `leave`
 *    ignores it.
 * 4. Slots. A function's slot is found by its DESC's address (static data
 *    never moves), through a 64-entry cache per thread, then the
 *    registry, under its lock: the registry parses DESC once and gives
 *    two addresses of the same text one slot. The registry holds
 *    MAX_SLOTS functions; a function past them is not counted, and
 *    stderr says so once.
 * 5. Counts. Each thread counts into an array of its own (mmap'd once,
 *    MAX_SLOTS entries, so it never moves and only the pages of slots in
 *    use are touched), linked into a list that is never freed. `render`
 *    adds up the threads' arrays, so nothing is shared while counting.
 * 6. The profile's "budgets" section (version 6, profile-format.md)
 *    lists each registered function, sorted by file, line and function,
 *    with its calls, words, most words in one call and calls finished on
 *    another domain.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "caml/mlvalues.h"
#include "caml/domain_state.h"
#include "caml/fail.h"
#include "caml/memprof_budgets.h"
#include "caml/memprof_jsonbuf.h"
#include "caml/platform.h"

#define MAX_SLOTS 4096
#define NO_SLOT MAX_SLOTS           /* a function past the registry */
#define WORD_BITS 40
#define WORD_MASK ((UINT64_C(1) << WORD_BITS) - 1)
#define SLOT_SHIFT WORD_BITS        /* 14 bits of slot */
#define SLOT_MASK 0x3fff
#define DOMAIN_SHIFT 54             /* 8 bits of domain index */
#define DOMAIN_MASK 0xff
#define CACHE 64
#define HASH (2 * MAX_SLOTS)

struct budget_fn {                  /* a registered function, from DESC */
  const char *desc;
  const char *file, *fn, *attribute;
  size_t file_len, fn_len, attribute_len;
  long line;
  uint64_t limit;
};

struct budget_count {
  uint64_t calls, words, max, other;
};

struct budget_thread {
  struct budget_thread *next;
  struct budget_count counts[MAX_SLOTS];
};

static bool counting = false;
static caml_plat_mutex registry_lock = CAML_PLAT_MUTEX_INITIALIZER;
static struct budget_fn fns[MAX_SLOTS];
static _Atomic uintnat nfns = 0;
static const char *hash_key[HASH];    /* DESC address -> slot, open */
static uint16_t hash_slot[HASH];
static uintnat nkeys = 0;             /* hash_key's used entries */
static bool overflow_said = false;
static struct budget_thread *_Atomic threads = NULL;

static __thread struct { const char *key; uintnat slot; } cache[CACHE];
static __thread struct budget_count *mine = NULL;

void caml_memprof_budgets_start(void) { counting = true; }

bool caml_memprof_budgets_any(void) { return atomic_load(&nfns) > 0; }

/* Words the domain has allocated (design 2). */
static uint64_t words_now(caml_domain_state *d)
{
  return (uint64_t)d->stat_minor_words
    + Wsize_bsize((uintnat)d->young_end - (uintnat)d->young_ptr)
    + d->stat_major_words + d->allocated_words - d->stat_promoted_words;
}

/* DESC's fields, or false when it is not five tab-separated fields. */
static bool parse_desc(const char *desc, struct budget_fn *f)
{
  const char *field[5];
  size_t len[5];
  const char *p = desc;
  for (int i = 0; i < 5; i++) {
    const char *end = i < 4 ? strchr(p, '\t') : p + strlen(p);
    if (end == NULL) return false;
    field[i] = p;
    len[i] = end - p;
    p = end + 1;
  }
  char *stop;
  f->desc = desc;
  f->file = field[0]; f->file_len = len[0];
  f->fn = field[1]; f->fn_len = len[1];
  f->line = strtol(field[2], &stop, 10);
  if (stop != field[2] + len[2]) return false;
  f->attribute = field[3]; f->attribute_len = len[3];
  f->limit = strtoull(field[4], &stop, 10);
  return stop == field[4] + len[4];
}

static uintnat hash_of(const char *key)
{
  return ((uintnat)key >> 3) * 0x9E3779B97F4A7C15ULL >> 50 & (HASH - 1);
}

/* The slot of DESC's address `key`, registering it (design 4); kept out
 * of `enter`, whose cached path then saves no registers. */
static Caml_noinline uintnat registry_slot(const char *key)
{
  uintnat slot = NO_SLOT;
  caml_plat_lock_blocking(&registry_lock);
  uintnat h = hash_of(key);
  while (hash_key[h] != NULL && hash_key[h] != key) h = (h + 1) & (HASH - 1);
  if (hash_key[h] == key) {
    slot = hash_slot[h];
  } else {
    uintnat n = atomic_load(&nfns);
    for (uintnat i = 0; i < n; i++)
      if (strcmp(fns[i].desc, key) == 0) { slot = i; break; }
    if (slot == NO_SLOT && n < MAX_SLOTS && parse_desc(key, &fns[n])) {
      slot = n;
      atomic_store(&nfns, n + 1);
    } else if (slot == NO_SLOT && !overflow_said) {
      overflow_said = true;
      fprintf(stderr, "memprof-ci: an allocation budget is not counted "
              "(more than %d annotated functions, or a malformed one)\n",
              MAX_SLOTS);
    }
    if (slot != NO_SLOT && nkeys < HASH / 2) {
      hash_key[h] = key;
      hash_slot[h] = slot;
      nkeys++;
    }
  }
  caml_plat_unlock(&registry_lock);
  return slot;
}

CAMLprim value caml_memprof_budget_enter(value desc)
{
  if (!counting) return Val_long(-1);
  const char *key = String_val(desc);
  uintnat c = (uintnat)key >> 4 & (CACHE - 1);
  uintnat slot;
  if (cache[c].key == key) {
    slot = cache[c].slot;
  } else {
    slot = registry_slot(key);
    cache[c].key = key;
    cache[c].slot = slot;
  }
  caml_domain_state *d = Caml_state;
  return Val_long((words_now(d) & WORD_MASK)
                  | (uint64_t)slot << SLOT_SHIFT
                  | (uint64_t)(d->id & DOMAIN_MASK) << DOMAIN_SHIFT);
}

/* The calling thread's counts (design 5). */
static Caml_noinline struct budget_count *thread_counts(void)
{
  struct budget_thread *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (t == MAP_FAILED) caml_raise_out_of_memory();
  t->next = atomic_load(&threads);
  while (!atomic_compare_exchange_weak(&threads, &t->next, t)) {}
  return mine = t->counts;
}

CAMLprim value caml_memprof_budget_leave(value token)
{
  intnat t = Long_val(token);
  if (t < 0) return Val_unit;
  uintnat slot = (uintnat)t >> SLOT_SHIFT & SLOT_MASK;
  if (slot == NO_SLOT) return Val_unit;
  struct budget_count *k = (mine != NULL ? mine : thread_counts()) + slot;
  caml_domain_state *d = Caml_state;
  if (((uintnat)t >> DOMAIN_SHIFT & DOMAIN_MASK)
      != ((uintnat)d->id & DOMAIN_MASK)) {
    k->other++;
    return Val_unit;
  }
  uint64_t words = (words_now(d) - (uint64_t)t) & WORD_MASK;
  k->calls++;
  k->words += words;
  if (words > k->max) k->max = words;
  return Val_unit;
}

static int compare_len(const char *a, size_t la, const char *b, size_t lb)
{
  int c = memcmp(a, b, la < lb ? la : lb);
  return c != 0 ? c : (la > lb) - (la < lb);
}

static int compare_fns(const void *x, const void *y)
{
  const struct budget_fn *a = &fns[*(const uint16_t *)x];
  const struct budget_fn *b = &fns[*(const uint16_t *)y];
  int c = compare_len(a->file, a->file_len, b->file, b->file_len);
  if (c == 0) c = (a->line > b->line) - (a->line < b->line);
  if (c == 0) c = compare_len(a->fn, a->fn_len, b->fn, b->fn_len);
  return c;
}

bool caml_memprof_budgets_render(struct caml_memprof_buf *b)
{
  uintnat n = atomic_load(&nfns);
  if (n == 0) return true;
  uint16_t order[MAX_SLOTS];
  for (uintnat i = 0; i < n; i++) order[i] = (uint16_t)i;
  qsort(order, n, sizeof order[0], compare_fns);
  caml_memprof_buf_lit(b, ",\n\"budgets\":[");
  for (uintnat i = 0; i < n; i++) {
    const struct budget_fn *f = &fns[order[i]];
    struct budget_count sum = { 0, 0, 0, 0 };
    for (struct budget_thread *t = atomic_load(&threads); t; t = t->next) {
      const struct budget_count *k = &t->counts[order[i]];
      sum.calls += k->calls;
      sum.words += k->words;
      sum.other += k->other;
      if (k->max > sum.max) sum.max = k->max;
    }
    if (i) caml_memprof_buf_lit(b, ",");
    caml_memprof_buf_lit(b, "\n{\"function\":");
    caml_memprof_buf_json_string_n(b, f->fn, f->fn_len);
    caml_memprof_buf_lit(b, ",\"file\":");
    caml_memprof_buf_json_string_n(b, f->file, f->file_len);
    caml_memprof_buf_printf(b, ",\"line\":%ld,\"attribute\":", f->line);
    caml_memprof_buf_json_string_n(b, f->attribute, f->attribute_len);
    caml_memprof_buf_printf(b, ",\"limit\":%llu,\"calls\":%llu,"
                            "\"words\":%llu,\"max_words\":%llu,"
                            "\"other_domain_calls\":%llu}",
                            (unsigned long long)f->limit,
                            (unsigned long long)sum.calls,
                            (unsigned long long)sum.words,
                            (unsigned long long)sum.max,
                            (unsigned long long)sum.other);
  }
  caml_memprof_buf_lit(b, "\n]");
  return b->err == 0;
}
