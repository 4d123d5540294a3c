(* Allocation budgets (memprof_budgets.c): four annotated functions, whose
   calls this program also measures itself with Gc.minor_words around
   each call, printing "function calls words max" for each. *)

(* A library's memo table: a miss, one call in a thousand here, adds a
   bucket. *)
module Memo = struct
  let table : (int, int) Hashtbl.t = Hashtbl.create 1024
  let get k =
    match Hashtbl.find table k with
    | v -> v
    | exception Not_found -> let v = k * k in Hashtbl.replace table k v; v
end

let[@zero_alloc] scale (a : float array) k =
  for i = 0 to Array.length a - 1 do a.(i) <- a.(i) *. k +. 1.0 done

let[@memprof.words_per_call 3] pair x = (x, x + 1)

let[@memprof.words_per_call 8] memo i = Memo.get (i / 1000)

let[@memprof.words_per_call 3] pick i =
  if i land 7 = 0 then raise Exit else Sys.opaque_identity (i, i)

(* Not annotated: counted by no one. *)
let plain x = Sys.opaque_identity [x]

type stat = { mutable calls : int; mutable words : int; mutable max : int }

let stat () = { calls = 0; words = 0; max = 0 }

let add s m0 m1 =
  let w = int_of_float (m1 -. m0) in
  s.calls <- s.calls + 1;
  s.words <- s.words + w;
  if w > s.max then s.max <- w

let () =
  let n = int_of_string Sys.argv.(1) in
  let a = Array.make 16 1.0 in
  let s_scale = stat () and s_pair = stat () and s_memo = stat ()
  and s_pick = stat () in
  for i = 1 to n do
    let m0 = Gc.minor_words () in
    scale a 0.5;
    let m1 = Gc.minor_words () in
    add s_scale m0 m1;
    let m0 = Gc.minor_words () in
    ignore (Sys.opaque_identity (pair i));
    let m1 = Gc.minor_words () in
    add s_pair m0 m1;
    let m0 = Gc.minor_words () in
    ignore (Sys.opaque_identity (memo i));
    let m1 = Gc.minor_words () in
    add s_memo m0 m1;
    let m0 = Gc.minor_words () in
    (match pick i with _ -> () | exception Exit -> ());
    let m1 = Gc.minor_words () in
    add s_pick m0 m1;
    ignore (plain i)
  done;
  List.iter (fun (name, s) -> Printf.printf "%s %d %d %d\n" name s.calls s.words s.max)
    ["Budgets.scale", s_scale; "Budgets.pair", s_pair; "Budgets.memo", s_memo;
     "Budgets.pick", s_pick]
