(* The program test_view.py profiles and traces: Viewprog.make_rows
   allocates most (arrays of 40 words), and every 64th row is kept in a
   global list to the end; Viewprog.label allocates short-lived strings. *)

let kept = ref []

let make_rows i = Array.make 40 i

let label i = string_of_int i ^ "!"

let () =
  for i = 1 to 100_000 do
    let row = make_rows i in
    if i land 63 = 0 then kept := row :: !kept;
    ignore (Sys.opaque_identity (label i))
  done;
  Printf.printf "kept %d\n" (List.length !kept)
