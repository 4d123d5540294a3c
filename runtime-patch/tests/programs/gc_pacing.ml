(* Medium-lived data whose promotion depends on exactly when minor
   collections happen: a ring of recent trees, rebuilt continuously,
   with a non-allocating loop (it polls but never allocates) between
   rebuilds. *)
type tree = Leaf | Node of tree * int * tree

let rec build d = if d = 0 then Leaf else Node (build (d - 1), d, build (d - 1))

let () =
  let rounds = int_of_string Sys.argv.(1) in
  let ring = Array.make 64 Leaf in
  let numbers = List.init 300 Fun.id in
  let total = ref 0 in
  for i = 1 to rounds do
    ring.(i land 63) <- build 10;
    total := !total + List.fold_left ( + ) 0 numbers;
    if i mod 7 = 0 then ignore (Sys.opaque_identity (List.init 500 (fun k -> k * i)))
  done;
  ignore (Sys.opaque_identity !total)
