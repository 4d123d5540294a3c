(* One site's blocks kept in a global hash table, another's dropped, for
   the heap snapshot's tests (test_snapshot.py).

   `make_kept` allocates 200 tuples of 5 fields, each stored in the
   toplevel table `cache`; `make_dropped` allocates 200 tuples of 7
   fields held in the toplevel list `dropped`, which is promoted, then
   emptied before exit. Prints the table's number of buckets, the size
   of its bucket array. *)

let cache : (int, int * int * int * int * int) Hashtbl.t = Hashtbl.create 16

let dropped = ref []

let[@inline never] make_kept i = (i, i + 1, i + 2, i + 3, i + 4)

let[@inline never] make_dropped i = (i, i, i, i, i, i, i + 1)

let () =
  for i = 1 to 200 do Hashtbl.replace cache i (make_kept i) done;
  for i = 1 to 200 do dropped := make_dropped i :: !dropped done;
  (* In the major heap, so that only the exit's judgment can find them
     dead: no major cycle ends before exit. *)
  Gc.minor ();
  dropped := [];
  print_int (Hashtbl.stats cache).Hashtbl.num_buckets;
  print_newline ()
