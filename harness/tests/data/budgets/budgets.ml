(* Three functions with allocation budgets, for the gate's tests
   (test_budget_annotations_e2e.py): one that never allocates, one that
   allocates a tuple per call, and one that calls a library function
   allocating on one call in a thousand. *)

(* A library's memo table: a miss, one call in a thousand here, adds a
   bucket of 4 words. *)
module Memo = struct
  let table : (int, int) Hashtbl.t = Hashtbl.create 1024
  let get k =
    match Hashtbl.find table k with
    | v -> v
    | exception Not_found -> let v = k * k in Hashtbl.replace table k v; v
end

let[@zero_alloc] scale (a : float array) k =
  for i = 0 to Array.length a - 1 do
    a.(i) <- a.(i) *. k +. 1.0
  done

let[@memprof.words_per_call 3] pair x = (x, x + 1)

let[@memprof.words_per_call 8] memo i = Memo.get (i / 1000)

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 100_000 in
  let a = Array.make 16 1.0 in
  let check = ref 0 in
  for i = 1 to n do
    scale a 0.5;
    let x, y = Sys.opaque_identity (pair i) in
    check := (!check + x + y + memo i) land 0x3fffffff
  done;
  Printf.printf "budgets n=%d checksum=%d %g\n" n !check a.(0)
