(* A mix of allocations for the trace tests (test_trace.py): minor and
   major blocks, custom blocks with out-of-heap data (Bigarray), a hash
   table and lists, and a deep non-tail recursion whose long repetitive
   stacks exercise the trace's backtrace prediction.

   Usage: trace_mix.exe [SCALE [rss]]; with `rss` it also prints its peak
   resident set in kB (VmHWM of /proc/self/status) before it exits. *)

let peak_rss_kb () =
  let ic = open_in "/proc/self/status" in
  let rec find () =
    let l = input_line ic in
    if String.length l > 6 && String.sub l 0 6 = "VmHWM:" then
      Scanf.sscanf (String.sub l 6 (String.length l - 6)) " %d" Fun.id
    else find ()
  in
  let kb = find () in
  close_in ic;
  kb

let[@inline never] rec deep n = if n = 0 then [ref n] else ref n :: deep (n - 1)

let () =
  let scale = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 1 in
  let h = Hashtbl.create 16 in
  let keep = ref [] in
  for i = 1 to scale * 50_000 do
    Hashtbl.replace h (i mod 3000) (string_of_int i);
    if i mod 50 = 0 then keep := deep 300 :: !keep;
    if i mod 500 = 0 then keep := [];
    if i mod 1000 = 0 then
      ignore (Sys.opaque_identity (Bigarray.Array1.create Bigarray.float64
                                     Bigarray.c_layout 2000));
    if i mod 2000 = 0 then ignore (Sys.opaque_identity (Array.make 3000 i))
  done;
  Printf.printf "%d %d\n" (Hashtbl.length h) (List.length !keep);
  if Array.length Sys.argv > 2 then Printf.printf "%d\n" (peak_rss_kb ())
