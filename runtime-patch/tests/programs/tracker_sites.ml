(* Allocations of known sizes at named functions, for the built-in
   tracker's per-site tests. Nothing else in the program allocates
   much, so each function's sampled words can be checked against its
   exact allocation.

   Usage: tracker_sites.exe [SCALE]
   alloc_ten:   SCALE * 1_000_000 blocks of 10 words (9 fields + header), minor
   alloc_five:  SCALE * 1_000_000 blocks of 5 words, minor
   alloc_big:   SCALE * 2_000 blocks of 1001 words, major *)

let sink = ref (Obj.repr 0)

let[@inline never] alloc_ten i = sink := Obj.repr (i, i, i, i, i, i, i, i, i)
let[@inline never] alloc_five i = sink := Obj.repr (i, i, i, i)
let[@inline never] alloc_big i = sink := Obj.repr (Array.make 1000 i)

let () =
  let scale = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 1 in
  for i = 1 to scale * 1_000_000 do
    alloc_ten i;
    alloc_five i
  done;
  for i = 1 to scale * 2_000 do
    alloc_big i
  done
