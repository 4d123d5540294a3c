(* peak_tie.ml -- the same live heap reached again and again: after a
   full major collection, each round allocates one 1000-word array, at
   `first` in odd rounds and `second` in even ones, and drops it before
   the next collection. Every round reaches the same live total, so the
   peak is a tie between rounds; the format document keeps the first.
   Usage: peak_tie.exe ROUNDS *)

let held = ref [||]

let[@inline never] first () = Array.make 1000 1
let[@inline never] second () = Array.make 1000 2

let () =
  let rounds = int_of_string Sys.argv.(1) in
  Gc.full_major ();
  for i = 1 to rounds do
    held := (if i land 1 = 1 then first () else second ());
    held := [||];
    Gc.full_major ()
  done
