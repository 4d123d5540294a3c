(* Prints one line from its first module initialiser: the tests of
   malformed OCAMLMEMPROF values check that no OCaml code ran. *)
let () = print_endline "hello"
