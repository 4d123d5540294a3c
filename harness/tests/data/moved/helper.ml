(* Before the refactor: [caller] gets its pair from a helper of its own. *)
let[@inline never] helper n = Sys.opaque_identity (n, n + 1)

let[@inline never] caller n =
  let p = helper n in
  Sys.opaque_identity [fst p; snd p]

let[@inline never] other n = Sys.opaque_identity (Array.make n 0)

let () =
  let acc = ref 0 in
  for i = 1 to 100_000 do
    acc := !acc + List.length (caller i) + Array.length (other (i mod 50 + 1))
  done;
  Printf.printf "%d\n" !acc
