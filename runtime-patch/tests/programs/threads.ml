(* Four systhreads allocate, switching often, for the test that
   threaded programs profile without crash or lost samples. *)

let[@inline never] thread_work n =
  let acc = ref [] in
  for i = 1 to n do
    acc := [i; i];
    if i mod 1000 = 0 then Thread.yield ()
  done;
  ignore (Sys.opaque_identity !acc)

let () =
  let ts = List.init 4 (fun _ -> Thread.create thread_work 200_000) in
  thread_work 200_000;
  List.iter Thread.join ts
