(* Retains, or drops, a structure of known size, for the live-at-exit
   tests of the built-in tracker.

   Usage: retain.exe keep|drop
   Both modes allocate 100_000 blocks of 10 words at `make_block`, held
   in a list; `keep` holds the list until exit, `drop` forgets it and
   runs a full major collection before exiting. *)

let held = ref []

let[@inline never] make_block i = (i, i, i, i, i, i, i, i, i)

let () =
  let keep = Sys.argv.(1) = "keep" in
  for i = 1 to 100_000 do
    held := make_block i :: !held
  done;
  if not keep then begin
    held := [];
    Gc.full_major ()
  end
