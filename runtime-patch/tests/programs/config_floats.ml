(* Where a Gc.Memprof profile keeps its rate: the profile's two boxed
   floats (the rate and 1/log(1-rate)) must not be in a minor heap,
   where a collection would move them while other domains read them.

   Usage: config_floats.exe RATE
   Starts a profile at RATE (a float computed at run time, itself young)
   and prints "young N": how many of the two floats are young. *)

external young_fields : Gc.Memprof.t -> int = "memprofci_config_young_floats"

let () =
  let rate = Sys.opaque_identity (float_of_string Sys.argv.(1) /. 1.) in
  let p = Gc.Memprof.start ~sampling_rate:rate Gc.Memprof.null_tracker in
  Printf.printf "young %d\n" (young_fields p);
  Gc.Memprof.stop ()
