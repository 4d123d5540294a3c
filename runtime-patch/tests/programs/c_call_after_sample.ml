(* Allocations by OCaml code only, with a call to a C primitive that may
   allocate (polymorphic compare on pairs) at every step: the return
   from such a call turns a pending action into an interrupt, so a
   sample that left an action pending made the next allocation poll for
   GC work (memprof.c, design 8.9). GC-sensitive retention as in
   c_alloc_small.ml. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let keep = ref [] and r = ref 0 in
  for i = 1 to n do
    let x = (i, i land 7) in
    if compare x (Sys.opaque_identity (i, 3)) > 0 then incr r;
    keep := x :: !keep;
    if i mod 997 = 0 then keep := []
  done;
  print_int !r
