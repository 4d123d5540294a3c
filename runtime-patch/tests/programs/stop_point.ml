(* OCAMLMEMPROF stop=N (memprof_stop.c): a loop that allocates pairs and
   keeps every 64th, then says it finished. A run stopped early never
   prints "finished". *)

let () =
  let n = int_of_string Sys.argv.(1) in
  let kept = ref [] in
  for i = 1 to n do
    let p = (i, i + 1) in
    if i land 63 = 0 then kept := p :: !kept
  done;
  Printf.printf "finished %d\n" (List.length !kept)
