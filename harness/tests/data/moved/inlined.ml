(* After the refactor: the helper inlined by hand into its only caller; the
   program allocates the same blocks in the same order. *)
let[@inline never] caller n =
  let p = Sys.opaque_identity (n, n + 1) in
  Sys.opaque_identity [fst p; snd p]

let[@inline never] other n = Sys.opaque_identity (Array.make n 0)

let () =
  let acc = ref 0 in
  for i = 1 to 100_000 do
    acc := !acc + List.length (caller i) + Array.length (other (i mod 50 + 1))
  done;
  Printf.printf "%d\n" !acc
