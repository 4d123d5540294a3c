(* caml_alloc_shr called from C: Array.make of arrays too large for the
   minor heap (caml_make_vect allocates them with caml_alloc_shr, then
   polls). Small OCaml allocations in between fill the minor heap, so
   that minor collections are paced by it rather than by major slices,
   and a ring of the large arrays keeps some alive for a while. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let ring = Array.make 16 [||] in
  let keep = ref [] and r = ref 0 in
  for i = 1 to n do
    if i mod 100 = 0 then begin
      let a = Array.make (257 + i land 255) i in
      r := !r + Array.length a;
      ring.(i / 100 land 15) <- a
    end;
    keep := (i, i) :: !keep;
    if i mod 997 = 0 then keep := []
  done;
  print_int !r
