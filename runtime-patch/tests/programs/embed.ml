(* The OCaml part of a C program that embeds OCaml (embed_stub.c, whose
   main starts and shuts down the runtime itself): one array, made by a C
   primitive under an OCaml call, kept to the end. *)
let () = Callback.register "kept" (Array.make 10 0)
