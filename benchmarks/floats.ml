(* floats.ml -- float allocation: unboxed float arrays (small ones in the
   minor heap), boxed floats stored in polymorphic containers, and float
   record fields produced by a numeric kernel.
   Deterministic: values are computed from the size argument only; the
   checksum rounds the float result to an integer. *)

type vec = { x : float; y : float; z : float }

(* Small flat float arrays (minor heap), one per iteration. *)
let make_rows n width =
  Array.init n (fun i -> Array.init width (fun j -> float_of_int (i + j) *. 0.5))

(* Boxed floats: a float list allocates a box plus a cons cell per element. *)
let boxed_series n = List.init n (fun i -> sqrt (float_of_int i))

(* All-float records (stored flat) allocated by a small integrator. *)
let integrate steps =
  let rec go v p i =
    if i = 0 then p
    else
      let v = { x = v.x *. 0.999; y = v.y -. 0.001; z = v.z +. 0.0005 } in
      let p = { x = p.x +. v.x; y = p.y +. v.y; z = p.z +. v.z } in
      go v p (i - 1)
  in
  go { x = 1.0; y = 0.5; z = 0.0 } { x = 0.; y = 0.; z = 0. } steps

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 260 in
  let acc = ref 0.0 in
  for _ = 1 to n do
    let rows = make_rows 2_000 32 in
    acc := !acc +. rows.(1_000).(16);
    acc := !acc +. List.fold_left ( +. ) 0.0 (boxed_series 20_000);
    let p = integrate 50_000 in
    acc := !acc +. p.x +. p.y +. p.z
  done;
  Printf.printf "floats n=%d checksum=%d\n" n (int_of_float (Float.round !acc))
