(* memprof-ci test: a message that fails part way through unmarshalling
   leaves most of the minor-heap block it was read into unused. The minor
   heap is first filled with words whose every bit is set, the header of a
   block larger than any heap, so an unused tail that kept them would
   mislead the points' walk of the minor heap. *)

let () =
  let n = int_of_string Sys.argv.(1) in
  for _ = 1 to 12_000 do
    ignore (Sys.opaque_identity (Bytes.make 800 '\xff'))
  done;
  Gc.minor ();
  let msg = Bytes.of_string (Marshal.to_string (List.init n (fun i -> (i, i + 1))) []) in
  (* Data starts after the 20-byte header: the first cons cell (0xA0), its
     tuple (0xA0), then the tuple's first field, made an unknown code. *)
  assert (Bytes.get msg 20 = '\xa0' && Bytes.get msg 21 = '\xa0');
  Bytes.set msg 22 '\x1f';
  let failed =
    match (Marshal.from_bytes msg 0 : (int * int) list) with
    | _ -> false
    | exception Failure _ -> true
  in
  (* Enough allocation after it for a collection, which walks it. *)
  for i = 1 to 300_000 do ignore (Sys.opaque_identity [i]) done;
  print_endline (if failed then "failed" else "read")
