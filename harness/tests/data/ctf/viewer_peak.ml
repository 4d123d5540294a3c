(* viewer_peak.ml -- the peak live memory of a memtrace trace as
   memtrace_viewer reports it ("Peak live memory"): over the events
   memtrace's own Trace.Reader gives, in order, a running sum of each
   allocation's size (nsamples / sample_rate words, in bytes) minus the
   size of each collected object; the peak is its first strict maximum.
   Prints the peak in bytes and in samples. Built against memtrace's
   src/ (README.md here). *)

let () =
  let r = Trace.Reader.open_ ~filename:Sys.argv.(1) in
  let info = Trace.Reader.info r in
  let word_bytes = float_of_int (info.word_size / 8) in
  let bytes n = float_of_int n /. info.sample_rate *. word_bytes in
  let sizes = Hashtbl.create 4096 in
  let live = ref 0. and peak = ref 0. in
  Trace.Reader.iter r (fun _time ev ->
    match ev with
    | Trace.Event.Alloc { obj_id; nsamples; _ } ->
      Hashtbl.replace sizes obj_id nsamples;
      live := !live +. bytes nsamples;
      if !live > !peak then peak := !live
    | Collect (obj_id, _) ->
      live := !live -. bytes (Hashtbl.find sizes obj_id);
      Hashtbl.remove sizes obj_id
    | Promote _ -> ());
  Trace.Reader.close r;
  Printf.printf "peak %.0f bytes, %.0f samples\n" !peak
    (!peak *. info.sample_rate /. word_bytes)
