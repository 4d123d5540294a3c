(* Blocks held only by a local list on the stack, for the heap
   snapshot's tests (test_snapshot.py): `hold` builds a list of 300
   tuples of 6 fields made by `make_held` and calls `exit` while the
   list is still live in its frame, so the snapshot at exit finds them
   through that frame. *)

let[@inline never] make_held i = (i, i, i, i, i, i + 1)

let[@inline never] hold n =
  let l = List.init n make_held in
  let () = exit 0 in
  ignore (Sys.opaque_identity l)

let () = hold 300
