(* The C tracker's short sampling path (memprof.c, design 8.4):
   - "fibers": allocations inside an effect handler's fiber, so that a
     callstack crosses into the parent stack. With "ocaml" as second
     argument the program samples itself through Gc.Memprof (the stock
     callstack walker) and prints each distinct sampled stack of
     [make_cell] as "function:line" frames joined by " | "; the test
     compares them with the C tracker's stacks.
   - "signals": a signal handler still runs promptly while nearly every
     allocation is a sample (signals raise the allocation limit, so they
     take the usual path).
   - "finalisers": finalisers still run when the only polls left between
     minor collections are samples.
   - "compact": heap compactions while the profile (whose configuration
     lives outside the heap) is running. *)

type _ Effect.t += Yield : int -> unit Effect.t

let[@inline never] make_cell i = Array.make 5 i

let[@inline never] make_cells n =
  let acc = ref [] in
  for i = 1 to n do
    acc := make_cell i :: !acc;
    if i mod 100 = 0 then Effect.perform (Yield i)
  done;
  List.length !acc

let[@inline never] run_in_fiber n =
  Effect.Deep.match_with make_cells n
    { retc = (fun r -> r);
      exnc = raise;
      effc = (fun (type a) (e : a Effect.t) ->
        match e with
        | Yield _ ->
            Some (fun (k : (a, _) Effect.Deep.continuation) ->
                Effect.Deep.continue k ())
        | _ -> None) }

let frame_string slot =
  match Printexc.Slot.name slot, Printexc.Slot.location slot with
  | Some f, Some l -> Printf.sprintf "%s:%d" f l.Printexc.line_number
  | Some f, None -> f ^ ":?"
  | None, _ -> "?"

let stack_string cs =
  match Printexc.backtrace_slots cs with
  | None -> ""
  | Some slots -> String.concat " | " (Array.to_list (Array.map frame_string slots))

let fibers self_sample =
  let seen = Hashtbl.create 16 in
  if self_sample then begin
    let alloc (info : Gc.Memprof.allocation) =
      let s = stack_string info.callstack in
      if String.length s >= 19 && String.sub s 0 19 = "Fast_path.make_cell"
      then Hashtbl.replace seen s ();
      None
    in
    ignore (Gc.Memprof.start ~sampling_rate:1e-2 ~callstack_size:16
              { Gc.Memprof.null_tracker with alloc_minor = alloc; alloc_major = alloc })
  end;
  let total = ref 0 in
  for _ = 1 to 20 do total := !total + run_in_fiber 2000 done;
  if self_sample then begin
    Gc.Memprof.stop ();
    Hashtbl.iter (fun s () -> print_endline s) seen
  end;
  assert (!total = 40_000)

let signals () =
  (* SIGALRM from a 2 ms one-shot timer arrives while the loop allocates
     (a signal the program sent itself would be handled when the sending
     call returns, before any allocation); the loop only ends once the
     handler has run. "worst" is the most allocations a round made. *)
  let handled = ref 0 in
  Sys.set_signal Sys.sigalrm (Sys.Signal_handle (fun _ -> incr handled));
  let worst = ref 0 in
  for k = 1 to 20 do
    ignore (Unix.setitimer Unix.ITIMER_REAL
              { Unix.it_interval = 0.; it_value = 0.002 });
    let steps = ref 0 in
    while !handled < k do
      ignore (Sys.opaque_identity (ref !steps));
      incr steps
    done;
    if !steps > !worst then worst := !steps
  done;
  Printf.printf "handled=%d worst=%d\n" !handled !worst

let finalisers () =
  let finalised = ref 0 in
  for i = 1 to 1000 do
    Gc.finalise (fun _ -> incr finalised) (Sys.opaque_identity (ref i))
  done;
  let steps = ref 0 in
  while !finalised < 1000 && !steps < 50_000_000 do
    ignore (Sys.opaque_identity (Array.make 3 !steps));
    (* Major-heap allocations pace the major GC, whose cycles find the
       finalisable blocks dead. *)
    if !steps mod 64 = 0 then ignore (Sys.opaque_identity (Array.make 300 0));
    incr steps
  done;
  Printf.printf "finalised=%d\n" !finalised

let keep = ref []   (* reachable at exit *)

let compact () =
  for round = 1 to 5 do
    for i = 1 to 20_000 do
      let b = Array.make 8 i in
      if i mod 10 = 0 then keep := b :: !keep
    done;
    Gc.compact ();
    Printf.printf "round %d kept %d\n" round (List.length !keep)
  done

let () =
  match Array.to_list Sys.argv with
  | [ _; "fibers" ] -> fibers false
  | [ _; "fibers"; "ocaml" ] -> fibers true
  | [ _; "signals" ] -> signals ()
  | [ _; "finalisers" ] -> finalisers ()
  | [ _; "compact" ] -> compact ()
  | _ -> prerr_endline "usage: fast_path (fibers [ocaml] | signals | finalisers | compact)"; exit 2
