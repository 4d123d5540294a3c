(* A snapshot asked for by a program that lets the system reap its
   children (SIGCHLD ignored), so the tracker cannot read the exit status
   of the snapshot's process (test_snapshot_demand.py). Prints the
   primitive's answer. *)

external snapshot : unit -> string = "caml_memprof_ci_snapshot"

let () =
  Sys.set_signal Sys.sigchld Sys.Signal_ignore;
  print_endline (snapshot ())
