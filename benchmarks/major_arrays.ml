(* major_arrays.ml -- large blocks allocated directly in the major heap:
   arrays above Max_young_wosize (256 words) skip the minor heap entirely,
   so these samples go through the major-allocation path, never promote,
   and are freed by the major GC.
   Deterministic: sizes and contents depend only on the size argument. *)

(* Large int arrays (4096 words each). *)
let alloc_int_arrays count = Array.init count (fun i -> Array.make 4096 i)

(* Very large float arrays (64k words each). *)
let alloc_float_arrays count = List.init count (fun i -> Array.make 65536 (float_of_int i))

(* Array.append / Array.sub on big arrays: copies into fresh major blocks. *)
let copy_arrays a = Array.sub (Array.append a a) 100 (Array.length a)

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 300 in
  let check = ref 0 in
  for i = 1 to n do
    let ints = alloc_int_arrays 100 in
    check := !check + ints.(i mod 100).(17);
    let fl = alloc_float_arrays 6 in
    check := !check + int_of_float (List.hd fl).(5);
    let big = Array.make 20_000 i in
    let c = copy_arrays big in
    check := (!check + c.(0) + Array.length c) land 0x3fffffff
  done;
  Printf.printf "major_arrays n=%d checksum=%d\n" n !check
