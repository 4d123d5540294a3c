(* The free part of the minor heap at exit (memprof_reach.c, design 5):
   short-lived garbage runs through the whole minor heap many times, so
   every page of it has been written, then the program exits; a C
   atexit handler (minor_release_stub.c), which runs after the tracker
   has written its profile, prints how many whole pages of the minor
   heap's free part, [young_start, young_ptr), are resident. *)

external arm : unit -> unit = "minor_release_arm"

let () =
  arm ();
  let keep = ref [] in
  for i = 1 to 2_000_000 do
    let x = Sys.opaque_identity (i, i + 1, i + 2) in
    if i mod 100_000 = 0 then keep := x :: !keep
  done;
  Printf.printf "%d\n" (List.length !keep)
