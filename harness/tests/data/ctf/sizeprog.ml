(* short-lived lists and tuples, and every 50th tuple kept until exit *)
let () =
  Memtrace.trace_if_requested ();
  let kept = Array.make 20_000 (0, 0) in
  let acc = ref 0 in
  for i = 0 to 999_999 do
    let l = List.init 8 (fun j -> (i, j)) in
    acc := !acc + List.length l;
    if i mod 50 = 0 then kept.(i / 50) <- (i, i)
  done;
  Printf.printf "%d %d\n" !acc (fst kept.(100));
  Gc.full_major ()
