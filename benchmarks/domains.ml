(* domains.ml -- multi-domain allocation: two domains allocate in parallel,
   each in its own minor heap, through different functions (so per-site
   reports separate them): the main domain builds trees while one domain
   started with Domain.spawn builds lists of pairs.
   Deterministic: each worker's work and result depend only on the size
   argument; results are combined after Domain.join in a fixed order, so the
   checksum does not depend on scheduling.
   Each domain sets its own minor heap to 2M words (16 MB; Gc.set only
   affects the calling domain, spawned domains start at the default): minor
   collections are stop-the-world across domains in OCaml 5, and with the
   default 256k words the run time swings by 3-4x whenever another process
   takes one of the cores; fewer, larger minor collections keep it stable. *)

type tree = Leaf | Node of tree * int * tree

let rec build_tree d = if d = 0 then Leaf else Node (build_tree (d - 1), d, build_tree (d - 1))
let rec tree_sum = function Leaf -> 0 | Node (l, v, r) -> tree_sum l + v + tree_sum r

(* Main domain: trees. *)
let tree_worker rounds =
  let acc = ref 0 in
  for i = 1 to rounds do acc := (!acc + tree_sum (build_tree (9 + (i land 1)))) land 0x3fffffff done;
  !acc

(* Spawned domain: lists of boxed pairs. *)
let pairs_worker rounds =
  let acc = ref 0 in
  for i = 1 to rounds do
    let l = List.init 1_500 (fun j -> (i, j)) in
    acc := List.fold_left (fun a (x, y) -> (a + x + y) land 0x3fffffff) !acc l
  done;
  !acc

let big_minor_heap () = Gc.set { (Gc.get ()) with Gc.minor_heap_size = 2 * 1024 * 1024 }

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 14_000 in
  let d2 = Domain.spawn (fun () -> big_minor_heap (); pairs_worker n) in
  big_minor_heap ();
  let r1 = tree_worker n in
  let r2 = Domain.join d2 in
  Printf.printf "domains n=%d checksum=%d\n" n ((r1 + r2) land 0x3fffffff)
