(* Many short-lived blocks at three allocation points: n pairs alone,
   whose equal headers make runs in every segment of the minor heap; then
   n pairs with a boxed float every third pair, a mix. With n in the tens
   of millions the minor heap cycles through more words than
   memprof_points.c keeps packed between settlings. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let r = ref 0 in
  for i = 1 to n do
    let t = Sys.opaque_identity (i, -i) in
    r := !r + fst t
  done;
  for i = 1 to n do
    let t = Sys.opaque_identity (i, i) in
    r := !r + fst t;
    if i mod 3 = 0 then begin
      let f = Sys.opaque_identity (float_of_int i) in
      r := !r + int_of_float f
    end
  done;
  print_int !r
