(* A snapshot on demand while another systhread holds blocks on its own
   stack (test_snapshot_demand.py). `hold` allocates 2000 pairs in a
   list local to its thread, then waits on a mutex the main thread holds
   while it asks for the first snapshot; the second comes after that
   thread has ended. Prints each answer of the primitive. *)

external snapshot : unit -> string = "caml_memprof_ci_snapshot"

let m = Mutex.create ()
let ready = Atomic.make false

let[@inline never] make_held i = (i, i + 1)

let hold () =
  let mine = List.init 2000 make_held in
  Atomic.set ready true;
  Mutex.lock m;
  Mutex.unlock m;
  ignore (Sys.opaque_identity (List.length mine))

let () =
  Mutex.lock m;
  let t = Thread.create hold () in
  while not (Atomic.get ready) do Thread.yield () done;
  print_endline (snapshot ());
  Mutex.unlock m;
  Thread.join t;
  print_endline (snapshot ())
