(* One site holding 1% of the allocation, for the exact points check
   (test_points_check.py): `big` allocates 99 parts, `small` 1 part, each
   a tuple of three fields (4 words); with INJECT=1 in the environment
   `small` allocates 2% more. *)
let big n = for i = 1 to n do ignore (Sys.opaque_identity (i, i, i)) done

let small n = for i = 1 to n do ignore (Sys.opaque_identity (i, -i, i)) done

let () =
  let inject = Sys.getenv_opt "INJECT" = Some "1" in
  big 4_950_000;
  small (if inject then 51_000 else 50_000)
