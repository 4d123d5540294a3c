(* Three sites' blocks held together at the end of one long list, for
   the heap snapshot's tests (test_snapshot.py): their shortest paths
   share every hop down to the record that holds them.

   `long` is a toplevel list of 3000 cells; the last cell's head is
   [Some tail], and the record [tail] (not a global itself) holds a list of 10 blocks of
   each site: `make_pair` tuples, `make_floats` float arrays,
   `make_bytes` strings. *)

type tail = {
  pairs : (int * int) list;
  floats : float array list;
  bytes : string list;
}

let[@inline never] make_pair i = (i, i + 1)

let[@inline never] make_floats i = Array.make 3 (float_of_int i)

let[@inline never] make_bytes i = String.make 9 (Char.chr (65 + i))

let long =
  let tail = {
    pairs = List.init 10 make_pair;
    floats = List.init 10 make_floats;
    bytes = List.init 10 make_bytes;
  } in
  List.init 3000 (fun i -> if i = 2999 then Some tail else None)

let () = ignore (Sys.opaque_identity long)
