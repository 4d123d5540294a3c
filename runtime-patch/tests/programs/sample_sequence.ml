(* Records which allocations Gc.Memprof samples, in program order, with
   OCaml callbacks (no built-in tracker): the determinism tests compare
   this sequence across runs, seeds, minor-heap sizes and extra minor
   collections.

   Usage: sample_sequence.exe RATE [extra-minors]
   Prints one line per sampled block: step kind size n_samples source.
   `step` counts the program's allocation events, so a line names the
   allocation it came from. The callbacks allocate, but memprof does
   not sample inside callbacks, so the program's own sequence of
   allocations is the same whatever is sampled. *)

let step = ref 0
let extra_minors = Array.length Sys.argv > 2 && Sys.argv.(2) = "extra-minors"
let samples = ref []

let record kind (info : Gc.Memprof.allocation) =
  let src = match info.source with
    | Gc.Memprof.Normal -> "normal" | Marshal -> "marshal" | Custom -> "custom" in
  samples := (!step, kind, info.size, info.n_samples, src) :: !samples;
  None

let tick () =
  incr step;
  if extra_minors && !step mod 97 = 0 then Gc.minor ()

let[@inline never] small_list n = List.init n (fun i -> tick (); i)
let[@inline never] big_array n = tick (); Array.make n 0
let[@inline never] closure_pair x = tick (); (fun y -> x + y), (fun y -> x * y)
let[@inline never] roundtrip v =
  tick (); (Marshal.from_string (Marshal.to_string v []) 0 : int list)
let[@inline never] string_of n = tick (); Bytes.make n 'x'

let () =
  let rate = float_of_string Sys.argv.(1) in
  let keep = ref [] in
  let tracker = { Gc.Memprof.null_tracker with
                  alloc_minor = record "minor"; alloc_major = record "major" } in
  let _ = Gc.Memprof.start ~sampling_rate:rate ~callstack_size:1 tracker in
  for i = 1 to 2000 do
    let l = small_list (i mod 50) in
    let a = big_array (300 + i mod 700) in
    let f, g = closure_pair i in
    let r = roundtrip (small_list (i mod 20)) in
    let s = string_of (i mod 300) in
    if i mod 10 = 0 then keep := (l, a, f 1 + g 2, r, s) :: !keep
  done;
  Gc.Memprof.stop ();
  ignore (Sys.opaque_identity !keep);
  List.iter (fun (st, k, sz, n, src) -> Printf.printf "%d %s %d %d %s\n" st k sz n src)
    (List.rev !samples)
