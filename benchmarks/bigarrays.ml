(* bigarrays.ml -- custom blocks: Bigarray allocations whose data lives
   outside the OCaml heap (malloc) and whose small custom-block headers are
   tracked by memprof with source "Custom"; also Bigarray slices (sub), which
   allocate new proxy custom blocks.
   Deterministic: sizes and contents depend only on the size argument. *)

open Bigarray

(* Many small 1-D bigarrays: one custom block (plus malloc) each. *)
let alloc_small count =
  let acc = ref 0 in
  for i = 1 to count do
    let a = Array1.create int c_layout 16 in
    Array1.fill a i;
    acc := !acc + a.{3}
  done;
  !acc

(* Fewer, larger 2-D float bigarrays. *)
let alloc_matrices count =
  let acc = ref 0.0 in
  for i = 1 to count do
    let m = Array2.create float64 c_layout 64 64 in
    Array2.fill m (float_of_int i);
    acc := !acc +. m.{10, 10}
  done;
  !acc

(* Slices of a shared bigarray: a custom proxy block per slice. *)
let slices base count =
  let acc = ref 0 in
  for i = 0 to count - 1 do
    let s = Array1.sub base (i land 1023) 64 in
    acc := !acc + s.{1}
  done;
  !acc

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 120 in
  let base = Array1.init int c_layout 2048 (fun i -> i) in
  let check = ref 0 in
  for _ = 1 to n do
    check := !check + alloc_small 10_000;
    check := !check + int_of_float (alloc_matrices 300);
    check := (!check + slices base 20_000) land 0x3fffffff
  done;
  Printf.printf "bigarrays n=%d checksum=%d\n" n !check
