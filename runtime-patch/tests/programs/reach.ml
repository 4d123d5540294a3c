(* Blocks kept alive at exit, or not, by every kind of reference the
   exit-time reachability walk must follow (or must not), one site per
   kind, for the live-at-exit tests of the built-in tracker.

   Usage: reach.exe [ephemeron]
   Each site allocates [n] list cells with a 3-field tuple each, in one
   function, so that all of a site's samples are live at exit or none
   is. Sites named kept_* are reachable at exit, dropped_* are not:
   - kept_global: from a module-level ref;
   - kept_fiber: from the stack of a fiber suspended on an effect whose
     continuation is kept (dropped_fiber: continuation dropped);
   - kept_closure: from the environment of a mutually recursive closure
     held through its second function (an infix pointer);
   - kept_lazy: the value of a forced lazy;
   - kept_finalised: unreachable but under Gc.finalise, which resurrects
     it, and whose finaliser keeps it if it runs (dropped_finalised_last:
     under Gc.finalise_last, which does not resurrect);
   - kept_thread: from the stack of a systhread blocked at exit;
   - dropped: nothing refers to it.
   With "ephemeron", kept_ephemeron is the data of an ephemeron whose
   key is kept, which makes the tracker let the GC decide instead.
   Prints "exiting" on stderr last, so that what the runtime logs
   afterwards can be told apart. *)

let n = 20_000

let[@inline never] kept_global acc i = (i, i + 1, i + 2) :: acc
let[@inline never] kept_fiber acc i = (i, i + 1, i + 2) :: acc
let[@inline never] dropped_fiber acc i = (i, i + 1, i + 2) :: acc
let[@inline never] kept_closure acc i = (i, i + 1, i + 2) :: acc
let[@inline never] kept_lazy acc i = (i, i + 1, i + 2) :: acc
let[@inline never] kept_finalised acc i = (i, i + 1, i + 2) :: acc
let[@inline never] dropped_finalised_last acc i = (i, i + 1, i + 2) :: acc
let[@inline never] kept_thread acc i = (i, i + 1, i + 2) :: acc
let[@inline never] kept_ephemeron acc i = (i, i + 1, i + 2) :: acc
let[@inline never] dropped acc i = (i, i + 1, i + 2) :: acc

let build site =
  let rec go acc i = if i = n then acc else go (site acc i) (i + 1) in
  go [] 0

let globals = ref []

type _ Effect.t += Park : unit Effect.t

let parked : (unit, unit) Effect.Deep.continuation option ref = ref None

(* Runs [site]'s list on a fiber that then suspends; keeps the
   continuation only if [keep]. *)
let park site ~keep =
  let body () =
    let l = build site in
    Effect.perform Park;
    ignore (Sys.opaque_identity (List.length l))
  in
  Effect.Deep.match_with body ()
    { retc = (fun () -> ());
      exnc = raise;
      effc = (fun (type a) (e : a Effect.t) ->
        match e with
        | Park -> Some (fun (k : (a, unit) Effect.Deep.continuation) ->
            if keep then parked := Some k)
        | _ -> None) }

let kept_closure_ref = ref (fun (_ : int) -> 0)

let make_closure () =
  let data = build kept_closure in
  let rec even k = if k = 0 then List.length data else odd (k - 1)
  and odd k = if k = 0 then 0 else even (k - 1) in
  kept_closure_ref := odd

let kept_lazy_ref = ref (lazy [])

let make_lazy () =
  kept_lazy_ref := lazy (build kept_lazy);
  ignore (Sys.opaque_identity (Lazy.force !kept_lazy_ref))

(* A thread that builds its list, says so, and waits forever with the
   list live on its stack. *)
let m = Mutex.create ()
let c = Condition.create ()
let ready = ref false
let stop = ref false

let park_thread () =
  let body () =
    let l = build kept_thread in
    Mutex.lock m;
    ready := true;
    Condition.broadcast c;
    while not !stop do Condition.wait c m done;
    Mutex.unlock m;
    ignore (Sys.opaque_identity (List.length l))
  in
  ignore (Thread.create body ());
  Mutex.lock m;
  while not !ready do Condition.wait c m done;
  Mutex.unlock m

let finalised = ref []
let ephemerons = ref []
let ephemeron_keys = ref []

let () =
  globals := build kept_global;
  park kept_fiber ~keep:true;
  park dropped_fiber ~keep:false;
  make_closure ();
  make_lazy ();
  Gc.finalise (fun l -> finalised := l) (build kept_finalised);
  Gc.finalise_last (fun () -> ()) (build dropped_finalised_last);
  ignore (Sys.opaque_identity (build dropped));
  park_thread ();
  if Array.length Sys.argv > 1 && Sys.argv.(1) = "ephemeron" then begin
    let key = ref 0 in
    ephemerons := [ Ephemeron.K1.make key (build kept_ephemeron) ];
    ephemeron_keys := [ key ]
  end;
  prerr_endline "exiting"
