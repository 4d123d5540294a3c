(* Allocation on both sides of a fork: n pairs before it, n in the child
   (which then exits), n in the parent after the child has exited. With
   the points counted and a small minor heap, chunks are counted before
   the fork and on both sides after it. Prints the child's pid. *)
let n = int_of_string Sys.argv.(1)

let[@inline never] before i = Sys.opaque_identity (i, i)
let[@inline never] in_child i = Sys.opaque_identity (i, i)
let[@inline never] after i = Sys.opaque_identity (i, i)

let run f = for i = 1 to n do ignore (f i) done

let () =
  run before;
  match Unix.fork () with
  | 0 -> run in_child; exit 0
  | pid ->
      (match Unix.waitpid [] pid with
       | _, Unix.WEXITED 0 -> ()
       | _ -> prerr_endline "child failed"; exit 1);
      run after;
      Printf.printf "%d\n" pid
