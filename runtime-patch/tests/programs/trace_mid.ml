(* Prints, halfway through its allocations, whether the file named by its
   argument exists yet: the trace test checks that the trace's final name
   appears only once the trace is complete. *)

let sink = ref []

let[@inline never] work () =
  for i = 1 to 100_000 do sink := [i; i] done

let () =
  work ();
  Printf.printf "%b\n" (Sys.file_exists Sys.argv.(1));
  work ()
