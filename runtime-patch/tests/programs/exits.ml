(* Ends in the way its argument says, after allocating, for the tests
   that every exit path writes a profile and keeps the exit status.

   Usage: exits.exe normal|exit3|raise *)

let sink = ref []

let[@inline never] work () =
  for i = 1 to 200_000 do sink := [i; i] done

let () =
  work ();
  match Sys.argv.(1) with
  | "exit3" -> exit 3
  | "raise" -> failwith "deliberate uncaught exception"
  | _ -> ()
