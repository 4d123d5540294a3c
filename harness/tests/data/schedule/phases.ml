(* Two allocation sites: [chunk] builds 1000-word arrays, [scratch] short
   lists.  Each of the six phases keeps every HOLD-th chunk until it ends
   (HOLD is set when the test builds it; 0 keeps none, 1 every chunk);
   the others are dropped after use.  Allocation (the array that holds the
   chunks is made either way) and the live set at exit are the same
   whatever HOLD is; only what is live within a phase differs. *)
let hold = HOLD

let[@inline never] chunk i = Array.make 1000 i

let[@inline never] scratch i = Sys.opaque_identity (List.init 50 (fun j -> i + j))

let phase () =
  let kept = Array.make 1500 [||] in
  let sum = ref 0 in
  for i = 1 to 1500 do
    let c = Sys.opaque_identity (chunk i) in
    sum := !sum + c.(0) + List.length (scratch i);
    if hold > 0 && i mod hold = 0 then kept.(i - 1) <- c
  done;
  ignore (Sys.opaque_identity kept);
  !sum

let () =
  let total = ref 0 in
  for _ = 1 to 6 do total := !total + phase () done;
  Printf.printf "%d\n" !total
