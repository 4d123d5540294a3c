(* systhreads.ml -- systhreads allocation: three Thread.t in one domain
   take turns on the domain lock while each allocates through its own
   function (lists, strings, arrays), so samples come from several threads
   sharing one minor heap.
   Deterministic: each thread's work depends only on the size argument and
   writes only its own result slot; the checksum combines the slots after
   Thread.join, so thread interleaving does not change the output. *)

let list_worker rounds =
  let acc = ref 0 in
  for i = 1 to rounds do
    let l = List.init 1_000 (fun j -> i + j) in
    acc := (!acc + List.fold_left ( + ) 0 l) land 0x3fffffff
  done;
  !acc

let string_worker rounds =
  let acc = ref 0 in
  for i = 1 to rounds do
    let parts = List.init 100 (fun j -> string_of_int (i * j)) in
    acc := (!acc + String.length (String.concat "," parts)) land 0x3fffffff
  done;
  !acc

let array_worker rounds =
  let acc = ref 0 in
  for i = 1 to rounds do
    let a = Array.init 200 (fun j -> (i, j)) in
    acc := (!acc + snd a.(i mod 200)) land 0x3fffffff
  done;
  !acc

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 20_000 in
  let results = Array.make 3 0 in
  let spawn slot f = Thread.create (fun () -> results.(slot) <- f n) () in
  let ts = [ spawn 0 list_worker; spawn 1 string_worker; spawn 2 array_worker ] in
  List.iter Thread.join ts;
  Printf.printf "systhreads n=%d checksum=%d\n" n
    ((results.(0) + results.(1) + results.(2)) land 0x3fffffff)
