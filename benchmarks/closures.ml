(* closures.ml -- closure allocation: partial applications, closures capturing
   their environment, and continuation-passing style where every step
   allocates a fresh continuation closure.
   Deterministic: pure computation driven only by the size argument. *)

(* Builds a list of closures, each capturing two free variables. *)
let make_adders n =
  let rec go acc i =
    if i = 0 then acc else go ((fun x -> x + i * 7 + n) :: acc) (i - 1)
  in
  go [] n

let apply_all fs x = List.fold_left (fun acc f -> f acc land 0xffffff) x fs

(* CPS sum over 0..n-1: one continuation closure per step. *)
let rec cps_sum n k = if n = 0 then k 0 else cps_sum (n - 1) (fun s -> k (s + n))

(* Function composition chain: each step allocates a composed closure. *)
let compose_chain n =
  let rec go f i = if i = 0 then f else go (fun x -> f (x lxor i) + 1) (i - 1) in
  go (fun x -> x) n

(* Partial application of a non-inlined three-argument function. *)
let[@inline never] mix a b c = (a * 31) + (b * 17) + c
let partials n = List.init n (fun i -> mix i (i + 1))

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 10_000 in
  let check = ref 0 in
  for i = 1 to n do
    let fs = make_adders 2_000 in
    check := !check + apply_all fs i;
    check := !check + cps_sum 3_000 (fun s -> s);
    check := !check + (compose_chain 1_000) i;
    let ps = partials 500 in
    check := (!check + List.fold_left (fun acc p -> acc + p i) 0 ps) land 0x3fffffff
  done;
  Printf.printf "closures n=%d checksum=%d\n" n !check
