(* Snapshots taken while the program runs (OCAMLMEMPROF snapshot=call and
   snapshot=signal), for test_snapshot_demand.py.

   `make_kept` allocates 200 tuples of 5 fields kept in the toplevel
   table `cache` to the end; `make_dropped` 200 tuples of 7 fields held
   in the toplevel list `dropped` until the middle. A snapshot is asked
   for twice: with both held, then after `dropped` is emptied. The
   argument says how: "call" through the primitive (its answer, the path
   written or "", is printed on a line of its own), "signal" by sending
   this process SIGUSR1 and allocating until the snapshot's file, the
   second argument with the snapshot's number for %n, exists (at most
   a bounded number of rounds). *)

external snapshot : unit -> string = "caml_memprof_ci_snapshot"

let cache : (int, int * int * int * int * int) Hashtbl.t = Hashtbl.create 16

let dropped = ref []

let[@inline never] make_kept i = (i, i + 1, i + 2, i + 3, i + 4)

let[@inline never] make_dropped i = (i, i, i, i, i, i, i + 1)

let take how n =
  match how with
  | "call" -> print_endline (snapshot ())
  | "signal" ->
    let file = Printf.sprintf Scanf.(format_from_string Sys.argv.(2) "%d") n in
    Unix.kill (Unix.getpid ()) Sys.sigusr1;
    let rounds = ref 0 in
    while not (Sys.file_exists file) && !rounds < 1_000_000 do
      ignore (Sys.opaque_identity (ref !rounds));
      incr rounds
    done;
    print_endline (if Sys.file_exists file then file else "")
  | _ -> ()

let () =
  let how = Sys.argv.(1) in
  for i = 1 to 200 do Hashtbl.replace cache i (make_kept i) done;
  for i = 1 to 200 do dropped := make_dropped i :: !dropped done;
  take how 1;
  dropped := [];
  take how 2
