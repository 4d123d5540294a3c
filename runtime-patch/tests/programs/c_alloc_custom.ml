(* Custom blocks allocated from C: Int64.of_string boxes its result
   with caml_copy_int64 (caml_alloc_custom, small custom block). *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let strings = Array.init 64 (fun k -> string_of_int (k * 1_000_003)) in
  let keep = ref [] and r = ref 0L in
  for i = 1 to n do
    let x = Int64.of_string (Array.unsafe_get strings (i land 63)) in
    r := Int64.add !r x;
    keep := x :: !keep;
    if i mod 997 = 0 then keep := []
  done;
  print_string (Int64.to_string !r)
