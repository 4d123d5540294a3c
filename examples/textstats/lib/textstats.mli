(** Text statistics over a deterministic synthetic corpus. *)

val corpus : seed:int -> int -> string list
(** [corpus ~seed n]: [n] lines of words, the same for the same arguments. *)

val tokenize : string -> string list
val line_features : string list -> int array
val bigrams : string list -> string list

type summary = {
  lines : int;
  words : int;
  chars : int;
  distinct_bigrams : int;
  top_words : (string * int) list;
}

val analyse : string list -> summary
val to_string : summary -> string
