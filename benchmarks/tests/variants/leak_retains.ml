(* INJECTED REGRESSION: transient_work now keeps every fourth list alive.
   leak.ml -- a leak-like program: each round retains a fixed-size chunk in a
   global structure that is kept alive until exit, while also producing
   short-lived garbage.  The retained amount is known exactly:
   rounds * (chunk_cells cons cells + one 100-word array + a pair + a cons)
   = rounds * 3107 words including headers (printed as retained_words), so a
   tracker's "live at exit" numbers can be checked against it.
   Deterministic: what is retained depends only on the size argument. *)

(* Everything stored here stays reachable until the program exits. *)
let retained : (int list * int array) list ref = ref []

let chunk_cells = 1_000

(* The leaking site: one list of chunk_cells cells plus a 100-word array. *)
let retain_chunk round =
  let cells = List.init chunk_cells (fun i -> round + i) in
  retained := (cells, Array.make 100 round) :: !retained

(* Transient garbage of similar shape, dropped immediately. *)
let kept = ref []

let transient_work round =
  let l = List.init (12 * chunk_cells) (fun i -> i * round) in
  if round mod 4 = 0 then kept := l :: !kept;
  List.fold_left (fun a x -> (a + x) land 0xffffff) 0 l

let retained_sum () =
  List.fold_left
    (fun acc (cells, arr) -> (acc + List.length cells + arr.(0)) land 0x3fffffff)
    0 !retained

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 2_000 in
  let check = ref 0 in
  for round = 1 to n do
    retain_chunk round;
    check := (!check + transient_work round) land 0x3fffffff
  done;
  Printf.printf "leak n=%d retained_words=%d checksum=%d\n" n
    (n * ((chunk_cells * 3) + 101 + 3 + 3)) ((!check + retained_sum ()) land 0x3fffffff)
