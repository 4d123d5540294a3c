(* promote.ml -- medium-lived objects: small records are kept in a ring
   buffer larger than the minor heap, so most survive a minor collection
   (promotion) and then die in the major heap when overwritten.  Exercises
   the promote and major-deallocation paths of a tracker.
   Deterministic: ring size and contents depend only on the size argument. *)

type entry = { key : int; payload : int list }

(* Ring of 200k entries (~1.4M words live): far larger than the minor heap. *)
let ring_size = 200_000

let fill_ring ring rounds =
  for i = 0 to (rounds * ring_size) - 1 do
    let slot = i mod ring_size in
    ring.(slot) <- { key = i; payload = [ i; i + 1 ] }
  done

(* Short-lived entries that never survive a minor GC, for contrast. *)
let scratch count =
  let acc = ref 0 in
  for i = 1 to count do
    let e = { key = i; payload = [ i ] } in
    acc := !acc + e.key + List.length e.payload
  done;
  !acc

let () =
  let n = if Array.length Sys.argv > 1 then int_of_string Sys.argv.(1) else 12 in
  let ring = Array.make ring_size { key = 0; payload = [] } in
  let check = ref 0 in
  for _ = 1 to n do
    fill_ring ring 1;
    check := (!check + scratch 300_000 + ring.(12345).key) land 0x3fffffff
  done;
  Printf.printf "promote n=%d checksum=%d\n" n !check
