(* marshal_rt.ml -- Marshal round trips: serialising a structured value to a
   string (one large string allocation per round) and reading it back, which
   allocates the whole structure through the unmarshaller (memprof source
   "Marshal").
   Deterministic: the marshalled value depends only on the size argument and
   Marshal output is byte-for-byte reproducible. *)

type item = { id : int; name : string; tags : int list; weight : float }

let make_items n =
  List.init n (fun i ->
      { id = i; name = "item" ^ string_of_int i; tags = [ i; i * 2; i * 3 ];
        weight = float_of_int i /. 7. })

let encode (v : item list) = Marshal.to_string v [ Marshal.No_sharing ]

let decode s : item list = Marshal.from_string s 0

(* Small values round-tripped individually: many small unmarshal allocations. *)
let small_round_trips n =
  let acc = ref 0 in
  for i = 1 to n do
    let s = Marshal.to_string (i, [ i; i + 1 ], "x") [] in
    let ((a, l, _) : int * int list * string) = Marshal.from_string s 0 in
    acc := !acc + a + List.length l
  done;
  !acc

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 120 in
  let items = make_items 10_000 in
  let check = ref 0 in
  for _ = 1 to n do
    let s = encode items in
    let back = decode s in
    check := (!check + String.length s + (List.nth back 5_000).id
              + small_round_trips 5_000) land 0x3fffffff
  done;
  Printf.printf "marshal_rt n=%d checksum=%d\n" n !check
