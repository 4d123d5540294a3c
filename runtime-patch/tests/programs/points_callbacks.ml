(* Known allocation while the program's own Gc.Memprof callbacks run: they
   allocate (a list each) and, in the last loop, raise, which cancels the
   sampled allocation. Prints n, the refs made and the callbacks that
   raised. *)
let n = int_of_string Sys.argv.(1)
let junk = ref []
let cancel = ref false
let raised = ref 0

let tracker = { Gc.Memprof.null_tracker with
  alloc_minor = (fun info ->
    junk := List.init (info.size * 3 + 5) Fun.id
            :: (match !junk with _ :: _ :: l -> l | l -> l);
    if !cancel then begin incr raised; raise Exit end;
    Some ()) }

let kept = ref []
let () =
  let _ = Gc.Memprof.start ~sampling_rate:1e-2 tracker in
  for i = 1 to n do
    kept := Sys.opaque_identity (i, -i, i) :: !kept
  done;
  let s = ref 0. in
  for i = 1 to n do
    s := !s +. Sys.opaque_identity (float_of_int i *. 0.5)
  done;
  cancel := true;
  let made = ref 0 in
  for i = 1 to n do
    match Sys.opaque_identity (ref i) with
    | r -> if !r = i then incr made
    | exception Exit -> ()
  done;
  cancel := false;
  Gc.Memprof.stop ();
  Printf.printf "%d %d %d\n" (List.length !kept) !made !raised
