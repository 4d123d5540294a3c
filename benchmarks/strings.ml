(* strings.ml -- string and Buffer allocation: Buffer growth (repeated
   reallocation of the backing bytes), Printf.sprintf formatting, substring
   extraction and String.concat.
   Deterministic: the text produced depends only on the size argument. *)

(* Grows a Buffer from a tiny initial size, forcing repeated resizes. *)
let render_buffer n =
  let b = Buffer.create 16 in
  for i = 1 to n do
    Buffer.add_string b "item-";
    Buffer.add_string b (string_of_int i);
    Buffer.add_char b ';'
  done;
  Buffer.contents b

(* One small formatted string per element. *)
let format_lines n = List.init n (fun i -> Printf.sprintf "%04d:%x" i (i * 7919))

(* Splits a string on ';' into fresh substrings. *)
let split s = String.split_on_char ';' s

let join parts = String.concat "," parts

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 180 in
  let check = ref 0 in
  for _ = 1 to n do
    let s = render_buffer 10_000 in
    let parts = split s in
    let lines = format_lines 2_000 in
    let j = join lines in
    check := (!check + String.length s + List.length parts + String.length j
              + Char.code j.[String.length j / 2]) land 0x3fffffff
  done;
  Printf.printf "strings n=%d checksum=%d\n" n !check
