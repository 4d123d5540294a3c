(* Two domains allocate n tuples each at one allocation point and keep
   them all; each also stores its newest tuple into a shared major array,
   so the remembered set that every domain of a parallel minor collection
   scans holds the other domain's young blocks, and two domains can race
   to promote one block (test_points.py). *)
let n = int_of_string Sys.argv.(1)
let shared = Array.make 64 (0, 0)

let work id () =
  let kept = ref [] in
  for i = 1 to n do
    let t = Sys.opaque_identity (id, i) in
    shared.(i land 63) <- t;
    kept := t :: !kept
  done;
  !kept

let () =
  let d = Domain.spawn (work 1) in
  let mine = work 0 () in
  let theirs = Domain.join d in
  Gc.full_major ();
  Printf.printf "%d\n" (List.length mine + List.length theirs)
