(* lists.ml -- short-lived small blocks: cons cells, tuples and binary-tree
   nodes that die young in the minor heap (the classic functional workload).
   Deterministic: pure computation driven only by the size argument; no
   randomness, I/O or timing affects what is allocated. *)

type tree = Leaf | Node of tree * int * tree

(* Complete binary tree of the given depth: 2^depth - 1 three-field nodes. *)
let rec build_tree depth =
  if depth = 0 then Leaf
  else Node (build_tree (depth - 1), depth, build_tree (depth - 1))

let rec tree_sum = function
  | Leaf -> 0
  | Node (l, v, r) -> tree_sum l + v + tree_sum r

(* Tail-recursive list construction: one cons cell per element. *)
let build_list n =
  let rec go acc i = if i = 0 then acc else go (i :: acc) (i - 1) in
  go [] n

(* Pairs up adjacent elements: a tuple and a cons cell per element, so
   6 words for each of the 1,999 pairs of a 2,000-element list (its
   budget). *)
let[@memprof.words_per_call 11_994] pair_up l =
  let rec go acc = function
    | a :: (b :: _ as rest) -> go ((a, b) :: acc) rest
    | _ -> acc
  in
  go [] l

let[@zero_alloc] sum_pairs l = List.fold_left (fun s (a, b) -> s + (a * b land 0xffff)) 0 l

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 13_000 in
  let check = ref 0 in
  for i = 1 to n do
    (* trees: the biggest site *)
    check := !check + tree_sum (build_tree (10 + (i land 1)));
    (* lists: a smaller site *)
    let l = build_list 2_000 in
    check := (!check + sum_pairs (pair_up l)) land 0x3fffffff
  done;
  Printf.printf "lists n=%d checksum=%d\n" n !check
