(* The retention end-to-end test's program (test_retention_e2e.py), with
   a hidden leak: `remember` keeps every entry in the toplevel table `memo`
   and never evicts one; `scratch` arrays are dropped at once. *)

let recent : (int * int * int * int) Queue.t = Queue.create ()

let memo : (int, int * int * int * int) Hashtbl.t = Hashtbl.create 16

let[@inline never] make_entry i = (i, i * 2, i * 3, i * 5)

let[@inline never] make_scratch i = Array.make 8 i

let[@inline never] remember i e =
  Hashtbl.replace memo i e;
  ignore (Queue.length recent)

let () =
  let sum = ref 0 in
  for i = 1 to 20_000 do
    let e = make_entry i in
    remember i e;
    let a = make_scratch i in
    let (x, _, _, _) = e in
    sum := !sum + a.(3) + x
  done;
  print_int (!sum + Hashtbl.length memo);
  print_newline ()
