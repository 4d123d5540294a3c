(* Bigarrays: Bigarray.Array1.create allocates a custom block with
   caml_alloc_custom_mem, whose out-of-heap memory is sampled too and
   speeds up the minor GC. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let keep = ref [] and r = ref 0 in
  for i = 1 to n do
    let a = Bigarray.(Array1.create char c_layout (1 + i land 127)) in
    r := !r + Bigarray.Array1.dim a;
    keep := a :: !keep;
    if i mod 997 = 0 then keep := []
  done;
  print_int !r
