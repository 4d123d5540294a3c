(* A distinct callstack for nearly every allocation, as in programs that
   recurse through data (sandmark's bdd): `walk` recurses DEPTH levels
   through one of four call sites chosen by two bits of the leaf's
   number, so leaf N allocates under a stack of DEPTH return addresses
   that spells N in base 4.

   Usage: many_stacks.exe LEAVES DEPTH *)

let sink = ref None

let rec walk bits depth =
  if depth = 0 then begin
    sink := Some bits;
    0
  end else
    match bits land 3 with
    | 0 -> walk (bits lsr 2) (depth - 1) + 1
    | 1 -> walk (bits lsr 2) (depth - 1) + 2
    | 2 -> walk (bits lsr 2) (depth - 1) + 3
    | _ -> walk (bits lsr 2) (depth - 1) + 4

let () =
  let leaves = int_of_string Sys.argv.(1) in
  let depth = int_of_string Sys.argv.(2) in
  let total = ref 0 in
  for n = 0 to leaves - 1 do
    total := !total + walk n depth
  done;
  if !total < 0 then print_int !total
