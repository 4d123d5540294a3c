(* hashtables.ml -- Hashtbl growth: tables created small and grown by repeated
   insertion, so bucket arrays are reallocated (eventually in the major heap)
   and every binding allocates a bucket cell; string keys add small strings.
   Deterministic: tables are created with ~random:false, keys depend only on
   the size argument. *)

let fill_int_table n =
  let t = Hashtbl.create ~random:false 16 in
  for i = 0 to n - 1 do Hashtbl.replace t (i * 7) (i + 1) done;
  t

let fill_string_table n =
  let t = Hashtbl.create ~random:false 16 in
  for i = 0 to n - 1 do Hashtbl.replace t ("k" ^ string_of_int i) i done;
  t

(* Counting words: lookups plus updates that rebind existing keys. *)
let count_mod n m =
  let t = Hashtbl.create ~random:false 16 in
  for i = 0 to n - 1 do
    let k = i mod m in
    match Hashtbl.find_opt t k with
    | None -> Hashtbl.add t k 1
    | Some c -> Hashtbl.replace t k (c + 1)
  done;
  Hashtbl.fold (fun k v acc -> acc + (k * v)) t 0

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 9 in
  let check = ref 0 in
  for _ = 1 to n do
    let ti = fill_int_table 100_000 in
    let ts = fill_string_table 30_000 in
    check := (!check + Hashtbl.length ti + Hashtbl.length ts
              + Hashtbl.find ti 700 + Hashtbl.find ts "k123"
              + count_mod 100_000 5_000) land 0x3fffffff
  done;
  Printf.printf "hashtables n=%d checksum=%d\n" n !check
