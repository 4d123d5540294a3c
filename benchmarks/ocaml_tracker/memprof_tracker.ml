(* memprof_tracker.ml -- an OCaml-level Gc.Memprof tracker, the reference
   point for the overhead study of memprof-ci's built-in C tracker.

   Link this module FIRST (before the program's own modules) so that its
   initialiser runs before any program code.  If the environment variable
   OCAMLMEMPROF_OCAML_RATE is set (a sampling rate in samples per word, e.g.
   1e-4), it starts a Gc.Memprof profile whose callbacks do the per-stack
   counting a C tracker does:
   - alloc_minor / alloc_major: take the sampled callstack, key it by the raw
     return addresses of its first 16 frames (Printexc.raw_backtrace_entries;
     no symbolisation on the hot path), and count samples, blocks and words
     for that stack; return a per-block record so that memprof keeps
     tracking the block;
   - promote: count the promotion, keep tracking the block as major;
   - dealloc_minor / dealloc_major: count the deallocation.
   Frames are symbolised only at exit.  At exit sampling stops, and two
   major cycles are completed (Gc.major twice, which also runs the pending
   dealloc callbacks) before the profile is discarded: an OCaml tracker has
   no other way to tell which blocks are reachable at exit.  The built-in
   tracker decides the same question by a read-only walk of what the roots
   reach (two cycles only with live=gc or when the walk cannot be exact), so
   the overhead study charges this tracker the costlier way of doing the
   same work.  Then a one-line summary is printed
   to stderr:
     ocaml-tracker: rate=R stacks=N samples=S blocks=B words=W promoted=P
       freed=F live_blocks=L top=<first frame of the stack with most samples>
   If OCAMLMEMPROF_OCAML_OUT is also set, one line per stack is written to
   that file (samples, blocks, words, live blocks, then the symbolised frames).

   The callbacks are made re-entrant with one mutex: memprof runs callbacks of
   different domains (and of systhreads of one domain) concurrently, and new
   domains and threads join the profile started here.

   Deterministic: the tracker only observes; with a fixed rate the program's
   output is unchanged (memprof's sampling itself uses its own generator). *)

let max_frames = 16

type stack = {
  frames : Printexc.raw_backtrace_entry array;  (* at most max_frames *)
  mutable samples : int;      (* sum of n_samples *)
  mutable blocks : int;       (* sampled blocks *)
  mutable words : int;        (* words of the sampled blocks (size field) *)
  mutable minor : int;        (* of which allocated in the minor heap *)
  mutable promoted : int;
  mutable freed : int;        (* dealloc_minor + dealloc_major *)
}

(* The per-block record memprof keeps for every tracked block. *)
type block = { st : stack; n : int }

module Key = struct
  type t = Printexc.raw_backtrace_entry array

  let equal (a : t) (b : t) =
    let n = Array.length a in
    n = Array.length b
    &&
    let rec go i = i >= n || (a.(i) = b.(i) && go (i + 1)) in
    go 0

  (* Hash all frames (Hashtbl.hash would only look at the first ten). *)
  let hash (a : t) =
    let h = ref (Array.length a) in
    for i = 0 to Array.length a - 1 do
      h := (!h * 31) + (a.(i) :> int)
    done;
    !h land max_int
end

module Tbl = Hashtbl.Make (Key)

let table : stack Tbl.t = Tbl.create 1024
let lock = Mutex.create ()

let key_of (cs : Printexc.raw_backtrace) =
  let entries = Printexc.raw_backtrace_entries cs in
  if Array.length entries <= max_frames then entries
  else Array.sub entries 0 max_frames

let on_alloc ~minor (info : Gc.Memprof.allocation) =
  let key = key_of info.callstack in
  Mutex.protect lock (fun () ->
      let st =
        match Tbl.find_opt table key with
        | Some st -> st
        | None ->
            let st =
              { frames = key; samples = 0; blocks = 0; words = 0; minor = 0;
                promoted = 0; freed = 0 }
            in
            Tbl.add table key st;
            st
      in
      st.samples <- st.samples + info.n_samples;
      st.blocks <- st.blocks + 1;
      st.words <- st.words + info.size;
      if minor then st.minor <- st.minor + 1;
      Some { st; n = info.n_samples })

let on_promote b =
  Mutex.protect lock (fun () -> b.st.promoted <- b.st.promoted + 1);
  Some b

let on_dealloc b = Mutex.protect lock (fun () -> b.st.freed <- b.st.freed + 1)

let tracker : (block, block) Gc.Memprof.tracker =
  { Gc.Memprof.alloc_minor = on_alloc ~minor:true;
    alloc_major = on_alloc ~minor:false;
    promote = on_promote;
    dealloc_minor = on_dealloc;
    dealloc_major = on_dealloc }

(* "Module.function (file:line)" for the first symbolisable frame. *)
let describe_entry (e : Printexc.raw_backtrace_entry) =
  match Printexc.backtrace_slots_of_raw_entry e with
  | None -> Printf.sprintf "0x%x" (e :> int)
  | Some slots ->
      let parts =
        Array.to_list slots
        |> List.map (fun slot ->
               let name =
                 match Printexc.Slot.name slot with Some n -> n | None -> "?"
               in
               match Printexc.Slot.location slot with
               | Some l -> Printf.sprintf "%s (%s:%d)" name l.filename l.line_number
               | None -> name)
      in
      String.concat " <- " parts

let describe_stack st =
  Array.to_list st.frames |> List.map describe_entry |> String.concat " | "

let top_frame st =
  if Array.length st.frames = 0 then "?"
  else
    match Printexc.backtrace_slots_of_raw_entry st.frames.(0) with
    | Some slots when Array.length slots > 0 -> (
        match Printexc.Slot.name slots.(0) with Some n -> n | None -> "?")
    | _ -> "?"

let report rate profile () =
  (* Stop sampling first so the report itself is not profiled; settle
     what is live as the built-in tracker does; then discard, so no more
     callbacks run while we read the table. *)
  (try Gc.Memprof.stop () with _ -> ());
  Gc.major ();
  Gc.major ();
  (try Gc.Memprof.discard profile with _ -> ());
  let stacks = Tbl.fold (fun _ st acc -> st :: acc) table [] in
  let sum f = List.fold_left (fun a st -> a + f st) 0 stacks in
  let samples = sum (fun st -> st.samples) in
  let blocks = sum (fun st -> st.blocks) in
  let freed = sum (fun st -> st.freed) in
  let top =
    match List.sort (fun a b -> compare b.samples a.samples) stacks with
    | st :: _ -> top_frame st
    | [] -> "-"
  in
  Printf.eprintf
    "ocaml-tracker: rate=%g stacks=%d samples=%d blocks=%d words=%d promoted=%d freed=%d live_blocks=%d top=%s\n%!"
    rate (List.length stacks) samples blocks (sum (fun st -> st.words))
    (sum (fun st -> st.promoted)) freed (blocks - freed) top;
  match Sys.getenv_opt "OCAMLMEMPROF_OCAML_OUT" with
  | None | Some "" -> ()
  | Some path ->
      let oc = open_out path in
      List.iter
        (fun st ->
          Printf.fprintf oc "%d %d %d %d %s\n" st.samples st.blocks st.words
            (st.blocks - st.freed) (describe_stack st))
        (List.sort (fun a b -> compare b.samples a.samples) stacks);
      close_out oc

let () =
  match Sys.getenv_opt "OCAMLMEMPROF_OCAML_RATE" with
  | None | Some "" -> ()
  | Some s -> (
      match float_of_string_opt s with
      | Some rate when rate >= 0.0 && rate <= 1.0 ->
          let profile =
            Gc.Memprof.start ~sampling_rate:rate ~callstack_size:max_frames tracker
          in
          at_exit (report rate profile)
      | _ ->
          Printf.eprintf "ocaml-tracker: ignoring invalid OCAMLMEMPROF_OCAML_RATE=%S\n%!" s)
