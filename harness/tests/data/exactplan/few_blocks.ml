(* Few, large blocks and much work on them: counting every allocation costs
   little beside the program's own work.  Two sites; [grow] holds about 2%
   of the words when BUMP is 100, and BUMP scales it. *)
let keep = ref []

let big n = Array.make n 0.0

let grow n = Array.make (n * BUMP / 100) 0

let work (a : float array) =
  for k = 1 to 40 do
    for i = 0 to Array.length a - 1 do
      Array.unsafe_set a i (Array.unsafe_get a i +. float_of_int (i * k))
    done
  done

let () =
  for i = 1 to 600 do
    let a = big 20_000 in
    work a;
    let b = grow 400 in
    if i mod 100 = 0 then keep := [Obj.repr a; Obj.repr b]
  done;
  ignore (Sys.opaque_identity !keep)
