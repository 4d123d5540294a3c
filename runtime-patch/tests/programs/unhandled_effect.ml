(* Performs an effect that nothing handles, without linking Stdlib.Effect
   (the primitive is declared here), so Effect.Unhandled is not registered
   and the runtime itself ends the program with status 2: the test that
   this exit path writes a profile marked incomplete. *)

type _ Effect.t += Ask : int Effect.t

external perform : 'a Effect.t -> 'a = "%perform"

let sink = ref []

let[@inline never] work () =
  for i = 1 to 200_000 do sink := [i; i] done

let () =
  work ();
  print_int (perform Ask)
