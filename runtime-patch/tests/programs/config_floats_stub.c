/* C side of config_floats.ml: a Gc.Memprof.t is the runtime's
   configuration block, whose fields 1 and 2 hold the rate and
   1/log(1-rate) as boxed floats. */

#define CAML_INTERNALS
#include <caml/address_class.h>
#include <caml/mlvalues.h>

value memprofci_config_young_floats(value config)
{
  int n = 0;
  for (int i = 1; i <= 2; i++) {
    value f = Field(config, i);
    if (Is_block(f) && Is_young(f)) n++;
  }
  return Val_int(n);
}
