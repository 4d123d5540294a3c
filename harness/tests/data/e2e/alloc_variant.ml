(* Variant of the end-to-end benchmark: make_arrays allocates 30% more,
   and these extra comment lines shift every site down, which must not
   create new sites.
   (padding)
   (padding) *)
let keep = ref [||]

let make_lists n =
  let acc = ref 0 in
  for i = 1 to n do
    let l = List.init 10 (fun j -> i + j) in
    acc := !acc + List.length (Sys.opaque_identity l)
  done;
  !acc

let make_arrays n =
  let acc = ref 0 in
  for i = 1 to n * 13 / 10 do
    let a = Array.make 16 i in
    acc := !acc + Array.length (Sys.opaque_identity a)
  done;
  !acc * 10 / 13

let retain n = keep := Array.init n (fun i -> Sys.opaque_identity (ref i))

let () =
  let k = 200_000 in
  let a = make_lists k in
  let b = make_arrays k in
  retain 20_000;
  Printf.printf "%d %d %d\n" a b (Array.length !keep)
