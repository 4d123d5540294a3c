(* textstats -- a small text-statistics library: the code whose allocations
   the example's benchmark watches. Everything is deterministic: the corpus
   comes from a fixed linear congruential generator, never from Random's
   self-initialisation or the clock. *)

let vocabulary =
  [| "alloc"; "minor"; "major"; "heap"; "sample"; "stack"; "frame";
     "site"; "baseline"; "regression"; "budget"; "seed"; "domain";
     "thread"; "promote"; "collect"; "compact"; "marshal"; "closure";
     "buffer"; "string"; "array"; "record"; "variant"; "module" |]

(* A line of [words] words drawn from the vocabulary by an LCG on [state]. *)
let make_line state words =
  let b = Buffer.create 64 in
  for i = 1 to words do
    state := (!state * 1103515245 + 12345) land 0x3fffffff;
    if i > 1 then Buffer.add_char b ' ';
    let w = vocabulary.((!state lsr 8) mod Array.length vocabulary) in
    (* Every seventh word capitalised, so normalisation has work to do. *)
    if !state land 7 = 0 then Buffer.add_string b (String.capitalize_ascii w)
    else Buffer.add_string b w
  done;
  Buffer.contents b

(* [lines] lines of 8 to 15 words, the same for the same arguments. *)
let corpus ~seed lines =
  let state = ref seed in
  List.init lines (fun i -> make_line state (8 + (i mod 8)))

let tokenize line =
  List.map String.lowercase_ascii (String.split_on_char ' ' line)

(* Per-line features: word count, total length, longest word, ... in a
   fresh array, as a feature extractor would. *)
let line_features tokens =
  let f = Array.make 20 0 in
  List.iteri
    (fun i t ->
      let n = String.length t in
      f.(0) <- f.(0) + 1;
      f.(1) <- f.(1) + n;
      f.(2) <- max f.(2) n;
      f.(3 + (i mod 17)) <- f.(3 + (i mod 17)) + n)
    tokens;
  f

let count_words tbl tokens =
  List.iter
    (fun t ->
      match Hashtbl.find_opt tbl t with
      | Some r -> incr r
      | None -> Hashtbl.add tbl t (ref 1))
    tokens

(* Adjacent word pairs as "a b" strings. *)
let bigrams tokens =
  let rec go acc = function
    | a :: (b :: _ as rest) -> go ((a ^ " " ^ b) :: acc) rest
    | _ -> List.rev acc
  in
  go [] tokens

let top tbl k =
  let all = Hashtbl.fold (fun w r acc -> (w, !r) :: acc) tbl [] in
  let sorted =
    List.sort (fun (w1, c1) (w2, c2) -> if c1 <> c2 then compare c2 c1 else compare w1 w2) all
  in
  List.filteri (fun i _ -> i < k) sorted

type summary = {
  lines : int;
  words : int;
  chars : int;
  distinct_bigrams : int;
  top_words : (string * int) list;
}

let analyse lines =
  let words = Hashtbl.create 64 and pairs = Hashtbl.create 1024 in
  let n_words = ref 0 and n_chars = ref 0 and n_lines = ref 0 in
  List.iter
    (fun line ->
      let tokens = tokenize line in
      let f = line_features tokens in
      incr n_lines;
      n_words := !n_words + f.(0);
      n_chars := !n_chars + f.(1);
      count_words words tokens;
      count_words pairs (bigrams tokens))
    lines;
  { lines = !n_lines; words = !n_words; chars = !n_chars;
    distinct_bigrams = Hashtbl.length pairs; top_words = top words 5 }

let to_string s =
  Printf.sprintf "lines=%d words=%d chars=%d bigrams=%d top=%s" s.lines s.words
    s.chars s.distinct_bigrams
    (String.concat "," (List.map (fun (w, c) -> Printf.sprintf "%s:%d" w c) s.top_words))
