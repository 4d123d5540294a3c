(* A standard-library point (Stdlib__Hashtbl.add's bucket cell) whose
   allocation grows by about 6% through one new caller, Util.Memo.memo,
   while its largest callers, Path.Check.check_path and
   Traverse.Dfs.iter_component, allocate exactly as before
   (test_cause_e2e.py). *)
let () =
  let new_caller = Sys.getenv_opt "NEW_CALLER" = Some "1" in
  let scratch = Array.make 2_500 0 in
  for _ = 1 to 4 do
    Path.Check.check_path (Hashtbl.create 16) 150_000;
    Traverse.Dfs.iter_component (Hashtbl.create 16) 90_000
      (if new_caller then None else Some scratch);
    if new_caller then Util.Memo.memo (Hashtbl.create 16) 15_000 scratch
  done
