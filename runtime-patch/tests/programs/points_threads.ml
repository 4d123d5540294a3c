(* Three rounds of two spawned domains, joined at the end of each round (so
   later rounds reuse the domain slots), and in each domain, the main one
   included, two systhreads that allocate n pairs each at one point, every
   16th kept. Prints the pairs allocated. *)
let n = int_of_string Sys.argv.(1)

let work id () =
  let kept = ref [] in
  for i = 1 to n do
    let t = Sys.opaque_identity (id, i) in
    if i land 15 = 0 then kept := t :: !kept
  done;
  List.length !kept

let two_threads id () =
  let other = ref 0 in
  let th = Thread.create (fun () -> other := work (2 * id + 1) ()) () in
  let mine = work (2 * id) () in
  Thread.join th;
  mine + !other

let () =
  let kept = ref 0 in
  for round = 1 to 3 do
    let ds = List.init 2 (fun i -> Domain.spawn (two_threads (10 * round + i))) in
    kept := !kept + two_threads round ();
    List.iter (fun d -> kept := !kept + Domain.join d) ds
  done;
  Printf.printf "%d %d\n" (3 * 3 * 2 * n) !kept
