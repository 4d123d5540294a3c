(* stackmap.ml -- non-tail-recursive traversals (naive List.map, append,
   fold_right style) whose allocation happens while deep native stacks are
   live, so the sampled callstacks are long and repetitive.
   Deterministic: pure list processing driven only by the size argument. *)

(* Naive, non-tail-recursive map: one frame and one cons cell per element. *)
let rec naive_map f = function
  | [] -> []
  | x :: rest -> let y = f x in y :: naive_map f rest

(* Non-tail-recursive append: copies the whole first list. *)
let rec naive_append a b =
  match a with
  | [] -> b
  | x :: rest -> x :: naive_append rest b

(* Non-tail-recursive filter-map that allocates a boxed pair per kept element. *)
let rec filter_pairs = function
  | [] -> []
  | x :: rest ->
      if x land 3 = 0 then (x, x + 1) :: filter_pairs rest else filter_pairs rest

let rec sum_pairs = function
  | [] -> 0
  | (a, b) :: rest -> a + b + sum_pairs rest

let rec sum = function [] -> 0 | x :: rest -> x + sum rest

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 1_200 in
  let base = List.init 10_000 (fun i -> i) in
  let check = ref 0 in
  for _ = 1 to n do
    let m = naive_map (fun x -> x * 3) base in          (* largest site *)
    let a = naive_append m base in                       (* medium site *)
    let p = filter_pairs a in                            (* smallest site *)
    check := (!check + sum a + sum_pairs p) land 0x3fffffff
  done;
  Printf.printf "stackmap n=%d checksum=%d\n" n !check
