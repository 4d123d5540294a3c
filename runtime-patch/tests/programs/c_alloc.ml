(* caml_alloc called from C: Obj.new_block (caml_obj_block allocates
   with caml_alloc and initialises the fields). GC-sensitive retention
   as in c_alloc_small.ml. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let keep = ref [] and r = ref 0 in
  for i = 1 to n do
    let b = Obj.new_block 0 (1 + i land 7) in
    r := !r + Obj.size b;
    keep := b :: !keep;
    if i mod 997 = 0 then keep := []
  done;
  print_int !r
