/* A C program that embeds OCaml (test_points.py): its own main starts the
   runtime, which runs embed.ml, then allocates from C with no OCaml code
   running, and shuts the runtime down instead of exiting through it. */
#define CAML_NAME_SPACE
#include <stdlib.h>
#include <caml/alloc.h>
#include <caml/callback.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>

int main(int argc, char **argv)
{
  caml_startup(argv);
  int n = argc > 1 ? atoi(argv[1]) : 0;
  value keep = Val_unit;
  caml_register_generational_global_root(&keep);
  for (int i = 0; i < n; i++)
    caml_modify_generational_global_root(&keep, caml_copy_string("from C"));
  caml_remove_generational_global_root(&keep);
  caml_shutdown();
  return 0;
}
