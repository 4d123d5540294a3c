(* bench -- the example's benchmark program: analyses [rounds] synthetic
   corpora of 2,000 lines, each in its own systhread (created, then joined
   before the next starts, so the work is the same on every run whatever
   the scheduler does), and writes one result line to stdout through Unix.

   Usage: bench.exe [ROUNDS] [--time]
   --time also prints the elapsed time (Unix.gettimeofday) on stderr; the
   manifest does not pass it, so profiled runs allocate the same every time. *)

let () =
  let rounds = ref 40 and time = ref false in
  Array.iteri
    (fun i a ->
      if i > 0 then if a = "--time" then time := true else rounds := int_of_string a)
    Sys.argv;
  let t0 = Unix.gettimeofday () in
  let checksum = ref 0 and last = ref "" in
  for r = 1 to !rounds do
    let result = ref None in
    let worker () =
      let s = Textstats.analyse (Textstats.corpus ~seed:r 2_000) in
      result := Some s
    in
    Thread.join (Thread.create worker ());
    match !result with
    | Some s ->
        checksum := (!checksum + s.words + s.chars + s.distinct_bigrams) land 0x3fffffff;
        last := Textstats.to_string s
    | None -> failwith "worker produced no result"
  done;
  let line = Printf.sprintf "textstats rounds=%d checksum=%d last: %s\n" !rounds !checksum !last in
  ignore (Unix.write_substring Unix.stdout line 0 (String.length line));
  if !time then Printf.eprintf "elapsed %.3f s\n" (Unix.gettimeofday () -. t0)
