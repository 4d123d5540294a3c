(* Two domains and the main one allocate concurrently, for the test that
   multi-domain programs profile without crash or lost samples. *)

let[@inline never] domain_work n =
  let acc = ref [] in
  for i = 1 to n do
    acc := [i];
    if i mod 100 = 0 then ignore (Sys.opaque_identity (Array.make 300 i))
  done;
  List.length !acc

let () =
  let ds = List.init 2 (fun _ -> Domain.spawn (fun () -> domain_work 300_000)) in
  let here = domain_work 300_000 in
  let total = List.fold_left (fun acc d -> acc + Domain.join d) here ds in
  Printf.printf "%d\n" total
