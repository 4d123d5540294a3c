#!/usr/bin/env bash
# What an allocation budget's annotation costs per call. One program,
# built twice with _build/runtime's compiler: a function that allocates
# nothing, marked [@inline never], called N times in a loop; once plain and
# once annotated [@zero_alloc]. Prints, for each build and for the
# annotated build with and without the tracker on (OCAMLMEMPROF
# rate=1e-4,seed=1), the instructions (cachegrind, COUNT calls) and the
# wall time (hyperfine, WALL calls), and the cost per call over the plain
# build. Prints a Markdown table.
#   benchmarks/budget_cost.sh [COUNT [WALL]]   (after `make runtime`;
#   defaults 10^7 and 10^8)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-10000000}
wall=${2:-100000000}
ocamlopt=_build/runtime/bin/ocamlopt
[ -x "$ocamlopt" ] || { echo "budget_cost: no $ocamlopt; run \`make runtime\` first" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
src() {  # $1: the attribute, or nothing
  cat <<ML
let[@inline never]$1 step (a : int array) i =
  let j = i land 15 in a.(j) <- a.(j) + i

let () =
  let n = int_of_string Sys.argv.(1) in
  let a = Array.make 16 0 in
  for i = 1 to n do step a i done;
  print_int a.(0)
ML
}
for v in plain annotated; do
  mkdir -p "$tmp/$v"
  src "$([ $v = plain ] || echo '[@zero_alloc]')" > "$tmp/$v/cost.ml"
  (cd "$tmp/$v" && "$OLDPWD/$ocamlopt" -g cost.ml -o cost.exe)
done
instr() {  # instructions of "$@" under cachegrind
  valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$tmp/cg" "$@" \
    >/dev/null 2>"$tmp/cg.log"
  awk '/^summary:/ {print $2}' "$tmp/cg"
}
seconds() {  # hyperfine's mean wall seconds of "$@"
  hyperfine -N -w 1 -r 5 --export-json "$tmp/h.json" "$*" >/dev/null 2>&1
  jq '.results[0].mean' "$tmp/h.json"
}
plain_i=$(instr "$tmp/plain/cost.exe" "$count")
plain_s=$(seconds "$tmp/plain/cost.exe" "$wall")
echo "| build | instructions ($count calls) | per call over plain | wall s ($wall calls) | ns per call over plain |"
echo "| --- | --: | --: | --: | --: |"
printf '| plain | %s | | %.3f | |\n' "$plain_i" "$plain_s"
for on in off on; do
  if [ $on = on ]; then export OCAMLMEMPROF="rate=1e-4,seed=1,out=$tmp/p.json"; else unset OCAMLMEMPROF; fi
  i=$(instr "$tmp/annotated/cost.exe" "$count")
  s=$(seconds "$tmp/annotated/cost.exe" "$wall")
  printf '| [@zero_alloc], tracker %s | %s | %.1f | %.3f | %.2f |\n' "$on" "$i" \
    "$(echo "($i - $plain_i) / $count" | bc -l)" "$s" \
    "$(echo "($s - $plain_s) * 10^9 / $wall" | bc -l)"
done
if [ -f "$tmp/p.json" ]; then
  jq -c '.budgets[] | {function, calls, words, max_words}' "$tmp/p.json" >&2
fi
