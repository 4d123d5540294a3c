(* Known allocation for the exact allocation points (test_points.py):
   argv: n tuples, k boxed floats, an array of a words, a string of b
   bytes made by a C primitive, an unmarshalled list of m cells, d copies
   by Obj.dup.  The tuples are kept to the end, so the collection below
   promotes each of them; the floats are dropped before it. *)
let arg i = int_of_string Sys.argv.(i)
let n = arg 1 and k = arg 2 and a = arg 3 and b = arg 4 and m = arg 5
and d = arg 6

let kept = ref []

let tuples () =
  for i = 1 to n do
    kept := Sys.opaque_identity (i, -i) :: !kept
  done

let floats () =
  let acc = ref [] in
  for i = 1 to k do
    acc := Sys.opaque_identity (float_of_int i *. 0.5) :: !acc
  done;
  List.length !acc

let () =
  tuples ();
  let f = floats () in
  let arr = if a > 0 then Array.make a 0 else [||] in
  let s = Bytes.create b in
  let u : int list = Marshal.from_string (Marshal.to_string (List.init m Fun.id) []) 0 in
  let dups = List.init d (fun _ -> Obj.dup (Obj.repr kept)) in
  Gc.minor ();
  Printf.printf "%d %d %d %d %d %d\n" (List.length !kept) f (Array.length arr)
    (Bytes.length s) (List.length u) (List.length dups)
