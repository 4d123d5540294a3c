(* A Gc.Memprof profile whose allocation callbacks get their callstack
   through a minor collection forced on the callback's own path.

   Blocks of 3 fields allocated from C (callstack_root_stub.c) are
   sampled with their callstacks stashed outside the heap; the collection
   requested after them makes their entries old before the callbacks run.
   The callback of each such block leaves just enough room in the minor
   heap for the next block's callstack (the same length as its own), so
   that the runtime's allocation of the next callback's sample record
   empties the minor heap, with that callstack only just copied to it.
   Every callback checks that its callstack is a live block (not a
   pointer into the free part of the minor heap, where a callstack the
   collection did not move would be left) and that of the allocation:
   not empty, and for the blocks made from C, passing through `from_c`.

   Usage: callstack_root.exe ROUNDS
   Prints "checked N bad M from_c K". *)

external alloc_from_c : int -> unit = "memprofci_alloc_from_c"
external leave_minor_words : int -> unit = "memprofci_leave_minor_words"
external dangling : Printexc.raw_backtrace -> bool = "memprofci_dangling"

let checked = ref 0
let bad = ref 0
let from_c_blocks = ref 0

let passes_through name slots =
  Array.exists
    (fun slot ->
       match Printexc.Slot.name slot with
       | Some n -> String.ends_with ~suffix:name n
       | None -> false)
    slots

let alloc_minor (info : Gc.Memprof.allocation) =
  incr checked;
  if dangling info.callstack then incr bad;
  let frames = Printexc.raw_backtrace_length info.callstack in
  (match Printexc.backtrace_slots info.callstack with
   | None -> incr bad
   | Some slots ->
     if Array.length slots = 0 then incr bad
     else if info.size = 3 && not (passes_through ".from_c" slots)
     then incr bad);
  if info.size = 3 then begin
    incr from_c_blocks;
    (* The next callstack takes frames + 1 words; 2 words are left for
       the 5 of the sample record. Nothing allocates after this. *)
    leave_minor_words (frames + 1 + 2)
  end;
  None

let[@inline never] from_c k = alloc_from_c k

let[@inline never] rec descend depth k =
  if depth = 0 then from_c k
  else begin
    descend (depth - 1) k;
    ignore (Sys.opaque_identity depth)
  end

let () =
  let rounds = int_of_string Sys.argv.(1) in
  let _ : Gc.Memprof.t =
    Gc.Memprof.start ~sampling_rate:1. ~callstack_size:64
      { Gc.Memprof.null_tracker with alloc_minor } in
  for i = 1 to rounds do
    descend (i mod 40) (2 + i mod 3);
    ignore (Sys.opaque_identity (ref i))
  done;
  Gc.Memprof.stop ();
  Printf.printf "checked %d bad %d from_c %d\n" !checked !bad !from_c_blocks
