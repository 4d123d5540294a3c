(* caml_alloc_small called from C: Array.make of small arrays
   (caml_make_vect allocates with caml_alloc_small, then polls with
   caml_process_pending_actions). The list [keep] is dropped every 997
   steps, so how much a minor collection promotes depends on exactly
   when it falls. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let keep = ref [] and r = ref 0 in
  for i = 1 to n do
    let a = Array.make (1 + i land 7) i in
    r := !r + Array.length a;
    keep := a :: !keep;
    if i mod 997 = 0 then keep := []
  done;
  print_int !r
