(* Sums Gc.Memprof sample counts per kind of allocation whose exact size
   is known, for the binomial distribution tests.

   Usage: distribution.exe RATE
   Prints: kind total_words n_samples   for kinds minor, major, marshal.
   total_words counts headers, as memprof does (size + 1 per block). *)

let counts = Hashtbl.create 3

let add kind n =
  Hashtbl.replace counts kind (n + try Hashtbl.find counts kind with Not_found -> 0)

let () =
  let rate = float_of_string Sys.argv.(1) in
  let phase = ref "minor" in
  let on_alloc (info : Gc.Memprof.allocation) =
    let kind = if info.source = Gc.Memprof.Marshal then "marshal" else !phase in
    add kind info.n_samples; None in
  let tracker = { Gc.Memprof.null_tracker with
                  alloc_minor = on_alloc; alloc_major = on_alloc } in
  let minor_words = ref 0 and major_words = ref 0 and marshal_words = ref 0 in
  let sink = ref [] in
  let big = ref [||] in
  let l = List.init 1000 Fun.id in
  let s = Marshal.to_string l [] in
  let _ = Gc.Memprof.start ~sampling_rate:rate ~callstack_size:1 tracker in
  (* Minor: 2-word cons cells and 10-word blocks. *)
  for i = 1 to 2_000_000 do
    sink := [i];
    if i land 1 = 0 then sink := [Array.make 9 i |> Array.length];
  done;
  minor_words := 2_000_000 * 3 + 1_000_000 * (10 + 3);
  (* Major: arrays larger than Max_young_wosize (256) go to the major heap. *)
  phase := "major";
  for i = 1 to 4000 do
    let n = 300 + (i mod 2700) in
    big := Array.make n 0;
    major_words := !major_words + n + 1
  done;
  (* Marshal: a 1000-element int list unmarshals to 1000 cons cells
     (3 words each with the header). *)
  phase := "marshal";
  for _ = 1 to 1000 do
    let l' : int list = Marshal.from_string s 0 in
    sink := l';
    marshal_words := !marshal_words + 3000
  done;
  Gc.Memprof.stop ();
  ignore (Sys.opaque_identity (!sink, !big));
  let get k = try Hashtbl.find counts k with Not_found -> 0 in
  Printf.printf "minor %d %d\nmajor %d %d\nmarshal %d %d\n"
    !minor_words (get "minor") !major_words (get "major")
    !marshal_words (get "marshal")
