(* A program that profiles itself with Gc.Memprof, for the tests of
   profiles that run beside the built-in tracker's.

   Usage: coexist.exe SCALE RATE_A RATE_B
   With SCALE 0 it does nothing (and starts no profile). Otherwise:
   - phase A: a profile at RATE_A whose callbacks track the blocks of
     `alloc_a` (4 fields) and allocate themselves; 200_000 * SCALE
     blocks, a quarter kept; then stop, discard, and the same allocation
     again with no profile;
   - phase B: a second profile at RATE_B tracking the blocks of `alloc_b`
     (9 fields); 100_000 * SCALE blocks, none kept; then stop (not
     discarded), a full major collection, and as many blocks again;
   - phase C: 100_000 * SCALE blocks at `alloc_c` (2 fields), no profile.
   Prints "key value" lines:
     a_samples, a_words       samples A's callbacks got at alloc_a, and
                              the words it allocated while A sampled
     a_late                   callbacks of A after its discard (0)
     b_samples, b_words       the same for B at alloc_b
     b_alloc_after_stop       allocation callbacks of B after its stop (0)
     b_tracked                blocks B's callbacks track
     b_dead, b_promoted       B's dealloc and promote callbacks
     site_a, site_b, site_c   words allocated at alloc_a, alloc_b and
                              alloc_c in all, including the runtime's for
                              the samples there of the program's profiles
                              (a sample record of 5 words and the
                              callstack array, frames + 1 words) *)

let[@inline never] alloc_a i = (i, i, i, i)
let[@inline never] alloc_b i = (i, i, i, i, i, i, i, i, i)
let[@inline never] alloc_c i = (i, i)

let a_samples = ref 0 and a_late = ref 0 and a_discarded = ref false
let b_samples = ref 0 and b_after_stop = ref 0 and b_stopped = ref false
let b_tracked = ref 0 and b_dead = ref 0 and b_promoted = ref 0
let extra_a = ref 0 and extra_b = ref 0
let log = ref []

(* Words the runtime allocated to hand this sample to a callback. *)
let runtime_words (info : Gc.Memprof.allocation) =
  let frames = Printexc.raw_backtrace_length info.callstack in
  5 + (if frames > 0 then frames + 1 else 0)

let tracker_a = {
  Gc.Memprof.null_tracker with
  alloc_minor = (fun info ->
    if !a_discarded then incr a_late;
    if info.size = 4 then begin
      a_samples := !a_samples + info.n_samples;
      extra_a := !extra_a + runtime_words info;
      (* The callbacks allocate: the built-in tracker counts this too. *)
      log := String.make 3 'a' :: !log;
      if List.length !log > 100 then log := [];
      Some info.n_samples
    end else None);
  promote = (fun n -> if !a_discarded then incr a_late; Some n);
  dealloc_minor = (fun _ -> if !a_discarded then incr a_late);
  dealloc_major = (fun _ -> if !a_discarded then incr a_late);
}

let tracker_b = {
  Gc.Memprof.null_tracker with
  alloc_minor = (fun info ->
    if !b_stopped then incr b_after_stop;
    if info.size = 9 then begin
      b_samples := !b_samples + info.n_samples;
      incr b_tracked;
      extra_b := !extra_b + runtime_words info;
      Some ()
    end else None);
  promote = (fun () -> incr b_promoted; Some ());
  dealloc_minor = (fun () -> incr b_dead);
  dealloc_major = (fun () -> incr b_dead);
}

let () =
  let scale = int_of_string Sys.argv.(1) in
  let rate_a = float_of_string Sys.argv.(2) in
  let rate_b = float_of_string Sys.argv.(3) in
  if scale > 0 then begin
    let na = 200_000 * scale and nb = 100_000 * scale in
    let keep = ref [] in
    let pa = Gc.Memprof.start ~sampling_rate:rate_a ~callstack_size:8 tracker_a in
    for i = 1 to na do
      let b = alloc_a i in
      if i land 3 = 0 then keep := b :: !keep
    done;
    Gc.Memprof.stop ();
    Gc.Memprof.discard pa;
    a_discarded := true;
    for i = 1 to na do
      let b = alloc_a i in
      if i land 3 = 0 then keep := b :: !keep
    done;
    Gc.full_major ();
    let _pb = Gc.Memprof.start ~sampling_rate:rate_b tracker_b in
    for i = 1 to nb do ignore (Sys.opaque_identity (alloc_b i)) done;
    Gc.Memprof.stop ();
    b_stopped := true;
    Gc.full_major ();
    for i = 1 to nb do ignore (Sys.opaque_identity (alloc_b i)) done;
    Gc.full_major ();
    for i = 1 to nb do ignore (Sys.opaque_identity (alloc_c i)) done;
    Printf.printf "a_samples %d\na_words %d\na_late %d\n" !a_samples (5 * na) !a_late;
    Printf.printf "b_samples %d\nb_words %d\nb_alloc_after_stop %d\n"
      !b_samples (10 * nb) !b_after_stop;
    Printf.printf "b_tracked %d\nb_dead %d\nb_promoted %d\n"
      !b_tracked !b_dead !b_promoted;
    Printf.printf "site_a %d\nsite_b %d\nsite_c %d\n"
      (2 * 5 * na + !extra_a) (2 * 10 * nb + !extra_b) (3 * nb);
    ignore (Sys.opaque_identity !keep)
  end
