(* A plugin that allocates n pairs when it is loaded, all kept. *)
let kept = ref []
let () =
  let n = int_of_string Sys.argv.(2) in
  for i = 1 to n do
    kept := Sys.opaque_identity (i, -i) :: !kept
  done;
  Printf.printf "%d\n" (List.length !kept)
