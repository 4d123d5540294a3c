(* mapset.ml -- persistent balanced trees (Map and Set): every insertion
   allocates O(log n) new nodes while older versions become garbage.
   Deterministic: keys come from a fixed linear congruential sequence
   determined only by the size argument. *)

module IM = Map.Make (Int)
module SS = Set.Make (String)

(* The key sequence's step: checked to allocate nothing (its budget). *)
let[@zero_alloc] next x = (x * 1103515245 + 12345) land 0x3fffffff

let build_map n =
  let rec go m x i = if i = 0 then m else go (IM.add (x land 0xfffff) i m) (next x) (i - 1) in
  go IM.empty 42 n

let build_set n =
  let rec go s x i =
    if i = 0 then s else go (SS.add (string_of_int (x land 0xffff)) s) (next x) (i - 1)
  in
  go SS.empty 7 n

(* Map.update/remove churn over an existing map. *)
let churn m n =
  let rec go m x i =
    if i = 0 then m
    else
      let k = x land 0xfffff in
      let m = if i land 1 = 0 then IM.remove k m else IM.update k (function None -> Some 1 | Some v -> Some (v + 1)) m in
      go m (next x) (i - 1)
  in
  go m 99 n

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 7 in
  let check = ref 0 in
  for _ = 1 to n do
    let m = build_map 50_000 in
    let s = build_set 20_000 in
    let m' = churn m 20_000 in
    check := (!check + IM.cardinal m + SS.cardinal s + IM.cardinal m'
              + IM.fold (fun k v acc -> (acc + k + v) land 0xffffff) m' 0) land 0x3fffffff
  done;
  Printf.printf "mapset n=%d checksum=%d\n" n !check
