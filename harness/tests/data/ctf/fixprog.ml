(* The program behind the memtrace fixtures (see README.md here): a
   hash table and lists; with the argument "more" it also keeps a list
   of boxed floats per step, an allocation regression; with "gc" it ends
   with a full major collection, so that every block is collected while
   memtrace still traces (the size comparison in the README). *)
let () =
  Memtrace.trace_if_requested ~context:"memprof-ci fixture" ();
  let more = Array.mem "more" Sys.argv in
  let h = Hashtbl.create 16 in
  let l = ref [] and extra = ref [] in
  for i = 1 to 100_000 do
    Hashtbl.replace h (i mod 5000) (string_of_int i);
    l := (i, float_of_int i) :: !l;
    if more then extra := [ float_of_int i; float_of_int (i + 1) ] :: !extra;
    if i mod 1000 = 0 then (l := []; extra := [])
  done;
  Printf.printf "%d\n" (Hashtbl.length h);
  if Array.mem "gc" Sys.argv then Gc.full_major ()
