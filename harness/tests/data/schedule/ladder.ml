(* Two allocation sites of about the same size: [tree] builds binary trees
   that live while [scratch] builds a list; which of them a minor
   collection finds alive, and so what is promoted and what is live at the
   peak, depends on where the collections fall.  SIZE is set when the test
   builds it: the list's length, 2000 cells, grows by 1% a step. *)
type tree = Leaf | Node of tree * int * tree

let size = SIZE

let[@inline never] rec tree d = if d = 0 then Leaf else Node (tree (d - 1), d, tree (d - 1))

let rec sum = function Leaf -> 0 | Node (l, v, r) -> sum l + v + sum r

let[@inline never] scratch n = Sys.opaque_identity (List.init n (fun j -> j))

let () =
  let acc = ref 0 in
  for i = 1 to 3000 do
    let t = tree (10 + (i land 1)) in
    let l = scratch size in
    acc := (!acc + sum t + List.length l) land 0xffffff
  done;
  Printf.printf "%d\n" !acc
