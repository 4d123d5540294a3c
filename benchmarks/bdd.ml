(* bdd.ml -- builds reduced ordered binary decision diagrams of the hidden
   weighted bit function (output bit number popcount(x) of the input x),
   the workload of sandmark's bdd benchmark, written independently.

   Why it is in the suite: its allocation happens inside a binary recursion
   (the memoised [apply] calls itself at two call sites, so the sampled
   callstacks spell a path through the diagram and almost every sample has
   a stack of its own), and the node table it builds stays alive until exit,
   so the profiler's exit-time work (stack resolution, the reachability
   walk) meets many distinct stacks and a large live heap.

   Deterministic: nodes are numbered in creation order and the hash tables
   are keyed by those numbers only; the size argument alone drives it. *)

type node =
  | Zero
  | One
  | Node of { var : int; low : node; high : node; id : int }

let id = function Zero -> 0 | One -> 1 | Node n -> n.id

(* The unique table: one node per (var, low, high), so equal functions are
   the same node. *)
let unique : (int * int * int, node) Hashtbl.t = Hashtbl.create 65536
let next_id = ref 2

let mk var low high =
  if low == high then low
  else
    let key = (var, id low, id high) in
    match Hashtbl.find_opt unique key with
    | Some n -> n
    | None ->
        let n = Node { var; low; high; id = !next_id } in
        incr next_id;
        Hashtbl.add unique key n;
        n

let var_of = function Node n -> n.var | Zero | One -> max_int

type op = And | Or

let leaf op a b =
  match op, a, b with
  | And, Zero, _ | And, _, Zero -> Some Zero
  | And, One, x | And, x, One -> Some x
  | Or, One, _ | Or, _, One -> Some One
  | Or, Zero, x | Or, x, Zero -> Some x
  | _ -> None

(* Memoised binary apply; the memo table lives for one top-level call. *)
let apply op a b =
  let memo : (int * int, node) Hashtbl.t = Hashtbl.create 4096 in
  let rec go a b =
    match leaf op a b with
    | Some r -> r
    | None ->
        let key = (id a, id b) in
        (match Hashtbl.find_opt memo key with
         | Some r -> r
         | None ->
             let v = min (var_of a) (var_of b) in
             let split x =
               match x with
               | Node n when n.var = v -> (n.low, n.high)
               | _ -> (x, x)
             in
             let a0, a1 = split a and b0, b1 = split b in
             let lo = go a0 b0 in
             let hi = go a1 b1 in
             let r = mk v lo hi in
             Hashtbl.add memo key r;
             r)
  in
  go a b

let var i = mk i Zero One
(* [count_eq n]: [t.(k).(i)] is the BDD of "exactly k of the variables
   i..n-1 are set", built bottom-up so each is made once. *)
let count_eq n =
  let t = Array.make_matrix (n + 2) (n + 1) Zero in
  t.(0).(n) <- One;
  for i = n - 1 downto 0 do
    for k = 0 to n - i do
      let with_ = if k = 0 then Zero else t.(k - 1).(i + 1) in
      t.(k).(i) <- mk i t.(k).(i + 1) with_
    done
  done;
  t

(* Hidden weighted bit: for weight k in 1..n, output x_k; 0 when k = 0. *)
let hwb n =
  let t = count_eq n in
  let acc = ref Zero in
  for k = 1 to n do
    acc := apply Or !acc (apply And t.(k).(0) (var (k - 1)))
  done;
  !acc

let rec size seen = function
  | Zero | One -> 0
  | Node n ->
      if Hashtbl.mem seen n.id then 0
      else (
        Hashtbl.add seen n.id ();
        1 + size seen n.low + size seen n.high)

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 18 in
  let f = hwb n in
  Printf.printf "hwb %d: %d nodes in the diagram, %d in the unique table\n" n
    (size (Hashtbl.create 1024) f) (Hashtbl.length unique)
