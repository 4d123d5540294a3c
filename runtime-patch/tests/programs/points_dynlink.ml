(* Loads the plugin named by argv.(1) (natdynlink), then allocates n
   pairs of its own. *)
let () =
  Dynlink.loadfile Sys.argv.(1);
  let n = int_of_string Sys.argv.(2) in
  let mine = ref [] in
  for i = 1 to n do
    mine := Sys.opaque_identity (i, i) :: !mine
  done;
  Printf.printf "%d\n" (List.length !mine)
