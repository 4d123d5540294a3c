(* Unmarshalling: Marshal.from_string of small values (intern allocates
   one minor block without tracking and samples each object in it) and,
   every 100th time, of a value too large for the minor heap (allocated
   with caml_alloc_shr). intern polls at the end. *)
let () =
  let n = int_of_string Sys.argv.(1) in
  let small = Marshal.to_string (List.init 6 (fun k -> (k, string_of_int k))) [] in
  let large = Marshal.to_string (Array.init 400 (fun k -> k)) [] in
  let keep = ref [] and r = ref 0 in
  for i = 1 to n do
    if i mod 100 = 0 then
      r := !r + Array.length (Marshal.from_string large 0 : int array)
    else begin
      let l : (int * string) list = Marshal.from_string small 0 in
      r := !r + List.length l;
      keep := l :: !keep
    end;
    if i mod 997 = 0 then keep := []
  done;
  print_int !r
