#!/usr/bin/env bash
# What exact mode (rate 1) costs each suite benchmark: CPU time (user +
# system, median of RUNS) unprofiled and at rate 1 with the default 16
# frames, their ratio, and the profile's size. Prints a Markdown table.
#   benchmarks/exact_cost.sh [RUNS]    (after `make runtime benchmarks`)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cpu() {  # median CPU seconds of $runs runs of "$@"
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%U %S' -o "$tmp/t" "$@" >/dev/null
    awk '{print $1 + $2}' "$tmp/t"
  done | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'
}
echo "| benchmark | unprofiled CPU s | rate 1 CPU s | ratio | profile bytes |"
echo "| --- | --: | --: | --: | --: |"
grep -A1 '^name = ' benchmarks/benchmarks.toml | paste - - - 2>/dev/null |
  sed -n 's/^name = "\([a-z_]*\)".*command = \[\(.*\)\].*/\1 \2/p' |
  while read -r name cmd; do
    args=$(echo "$cmd" | tr -d '",' | sed 's#\.\./_build#_build#')
    case $name in domains|systhreads) continue ;; esac
    off=$(cpu $args)
    on=$(OCAMLMEMPROF=rate=1,seed=1,out="$tmp/p.json" cpu $args)
    printf '| %s | %.2f | %.2f | %.1fx | %s |\n' "$name" "$off" "$on" \
      "$(echo "$on / $off" | bc -l)" "$(stat -c %s "$tmp/p.json")"
  done
