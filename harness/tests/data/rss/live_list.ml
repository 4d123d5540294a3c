(* One million list cells kept live to the end: at a high sampling rate
   the profiler tracks hundreds of thousands of them, which costs it
   memory of its own. *)
let () =
  let l = List.init 1_000_000 (fun i -> i) in
  Gc.full_major ();
  Printf.printf "%d\n" (List.length l)
