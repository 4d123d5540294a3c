(* n pairs, each kept in a ring of 2^16 slots until 2^16 more are made:
   with a minor heap of 32k words every pair is still held at the next
   collection and is promoted, so n in the tens of millions promotes more
   words than memprof_points.c keeps packed between settlings. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let ring = Array.make 65536 (0, 0) in
  for i = 1 to n do
    ring.(i land 65535) <- Sys.opaque_identity (i, i)
  done;
  print_int (fst ring.(n land 65535))
