(* peak_phase.ml -- phases that build chunks of 1000 words; with `hold`
   each phase keeps its chunks until it ends, otherwise each chunk is
   dropped after use. Allocation and the live set at exit are the same
   either way; only what is live in the middle of a phase differs.
   Usage: peak_phase.exe PHASES CHUNKS (hold|drop) *)

let chunk i = Array.make 1000 i

let phase ~hold chunks =
  let kept = ref [] in
  let sum = ref 0 in
  for i = 1 to chunks do
    let c = Sys.opaque_identity (chunk i) in
    sum := !sum + c.(0);
    if hold then kept := c :: !kept
  done;
  ignore (Sys.opaque_identity !kept);
  !sum

let () =
  let phases = int_of_string Sys.argv.(1) in
  let chunks = int_of_string Sys.argv.(2) in
  let hold = Sys.argv.(3) = "hold" in
  let total = ref 0 in
  for _ = 1 to phases do total := !total + phase ~hold chunks done;
  Printf.printf "%d\n" !total
