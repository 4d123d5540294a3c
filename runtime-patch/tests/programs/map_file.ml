(* Unix.map_file of a file of MB megabytes (argv: path MB), its mapping
   held until exit: on OCaml 5.4 statmemprof samples the mapped memory
   (CAML_MEMPROF_SRC_MAP_FILE, test_map_file.py); 5.3 does not. *)
let () =
  let path = Sys.argv.(1) and mb = int_of_string Sys.argv.(2) in
  let fd = Unix.openfile path [Unix.O_RDWR; Unix.O_CREAT; Unix.O_TRUNC] 0o600 in
  let a = Unix.map_file fd Bigarray.char Bigarray.c_layout true [| mb * 1024 * 1024 |] in
  let a = Bigarray.array1_of_genarray a in
  Bigarray.Array1.fill a 'x';
  Unix.close fd;
  Printf.printf "%d\n" (Bigarray.Array1.dim a);
  ignore (Sys.opaque_identity a)
