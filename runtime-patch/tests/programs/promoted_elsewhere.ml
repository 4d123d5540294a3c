(* Blocks sampled in one domain and promoted by another.

   The main domain allocates blocks at `make_tracked` (11 fields, made
   nowhere else) and hands them over through a major-heap array to a
   second domain, which holds them only from the far end of a long list
   of its own young cells, and then forgets them. In the minor
   collection that follows, the second domain promotes them, late: only
   after copying the rest of its list. The main domain, whose own part
   of the collection is short, must still see them promoted, not dead.
   The blocks stay reachable until exit.

   Usage: promoted_elsewhere.exe own|none ROUNDS
   `own` tracks the blocks with a Gc.Memprof profile of the main domain
   (rate 1) and prints "tracked N promoted P dead_minor D dead_major M";
   `none` starts no profile (for the built-in tracker) and prints
   "rounds R". *)

let per_round = 200
let list_length = 40_000

let mailbox : Obj.t array = Array.make 1024 (Obj.repr 0)
let kept : Obj.t array array = Array.make 64 [||]
let phase = Atomic.make 0

let[@inline never] make_tracked i = (i, i, i, i, i, i, i, i, i, i, i)

let rec wait_for p = if Atomic.get phase <> p then (Domain.cpu_relax (); wait_for p)

(* The second domain: per round, take the blocks out of the mailbox into
   the tail of a fresh list, hold it through the main domain's minor
   collection, then keep the (now promoted) blocks for good. *)
let holder rounds () =
  for r = 0 to rounds - 1 do
    wait_for 1;
    let l = ref [] in
    for i = 0 to per_round - 1 do l := mailbox.(i) :: !l done;
    for j = 1 to list_length do l := Obj.repr j :: !l done;
    Atomic.set phase 2;
    wait_for 3;
    let rec take n acc = function
      | x :: rest when n > 0 -> take (n - 1) (x :: acc) rest
      | _ -> acc in
    let rec drop n = function _ :: rest when n > 0 -> drop (n - 1) rest | l -> l in
    kept.(r) <- Array.of_list (take per_round [] (drop list_length !l));
    Atomic.set phase 0
  done

let tracked = ref 0
let promoted = ref 0
let dead_minor = ref 0
let dead_major = ref 0

let tracker = {
  Gc.Memprof.null_tracker with
  alloc_minor = (fun info -> if info.size = 11 then (incr tracked; Some ()) else None);
  promote = (fun () -> incr promoted; Some ());
  dealloc_minor = (fun () -> incr dead_minor);
  dealloc_major = (fun () -> incr dead_major);
}

let () =
  let own = Sys.argv.(1) = "own" in
  let rounds = min 64 (int_of_string Sys.argv.(2)) in
  let d = Domain.spawn (holder rounds) in
  let profile =
    if own then Some (Gc.Memprof.start ~sampling_rate:1. tracker) else None in
  for _ = 1 to rounds do
    for i = 0 to per_round - 1 do mailbox.(i) <- Obj.repr (make_tracked i) done;
    Atomic.set phase 1;
    wait_for 2;
    for i = 0 to per_round - 1 do mailbox.(i) <- Obj.repr 0 done;
    Gc.minor ();
    Atomic.set phase 3;
    wait_for 0
  done;
  Domain.join d;
  (match profile with
   | Some _ ->
     Gc.Memprof.stop ();
     Printf.printf "tracked %d promoted %d dead_minor %d dead_major %d\n"
       !tracked !promoted !dead_minor !dead_major
   | None -> Printf.printf "rounds %d\n" rounds);
  ignore (Sys.opaque_identity kept)
