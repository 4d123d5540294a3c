(* Strings allocated from C: Bytes.create of small strings
   (caml_alloc_string in the minor heap), of large ones (caml_alloc_shr,
   then caml_check_urgent_gc), and a Buffer that grows by reallocating
   its bytes. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let keep = ref [] and r = ref 0 in
  let buf = ref (Buffer.create 16) in
  for i = 1 to n do
    let len = if i mod 500 = 0 then 3000 else 1 + i land 63 in
    let b = Bytes.create len in
    r := !r + Bytes.length b;
    keep := b :: !keep;
    Buffer.add_char !buf 'x';
    if i mod 997 = 0 then begin
      keep := [];
      r := !r + Buffer.length !buf;
      buf := Buffer.create 16
    end
  done;
  print_int !r
