(* A snapshot asked for while another domain runs, then after it was
   joined (test_snapshot_demand.py). Prints each answer of the primitive
   between brackets. *)

external snapshot : unit -> string = "caml_memprof_ci_snapshot"

let () =
  let go = Atomic.make false in
  let d = Domain.spawn (fun () -> while not (Atomic.get go) do Domain.cpu_relax () done) in
  Printf.printf "[%s]\n%!" (snapshot ());
  Atomic.set go true;
  Domain.join d;
  Printf.printf "[%s]\n%!" (snapshot ())
