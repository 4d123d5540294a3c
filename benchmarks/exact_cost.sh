#!/usr/bin/env bash
# What exact mode (rate 1) costs each suite benchmark: CPU time (user +
# system, median of RUNS) unprofiled, and at rate 1 three ways: whole
# stacks of the default 16 frames, frames=1, and stacks=site (what the
# harness uses at rate 1); for each, its ratio to the unprofiled time and
# the profile's size (of the last run). Prints a Markdown table.
#   benchmarks/exact_cost.sh [RUNS [NAME...]]   (after `make runtime benchmarks`)
# With NAMEs, only those benchmarks (else every single-domain one).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
shift || true
only=" $* "
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cpu() {  # median CPU seconds of $runs runs of "$@"
  for _ in $(seq "$runs"); do
    /usr/bin/time -f '%U %S' -o "$tmp/t" "$@" >/dev/null
    awk '{print $1 + $2}' "$tmp/t"
  done | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'
}
echo "| benchmark | unprofiled CPU s | full: ratio | full: bytes | frames=1: ratio | frames=1: bytes | stacks=site: ratio | stacks=site: bytes |"
echo "| --- | --: | --: | --: | --: | --: | --: | --: |"
grep -A1 '^name = ' benchmarks/benchmarks.toml | paste - - - 2>/dev/null |
  sed -n 's/^name = "\([a-z_]*\)".*command = \[\(.*\)\].*/\1 \2/p' |
  while read -r name cmd; do
    args=$(echo "$cmd" | tr -d '",' | sed 's#\.\./_build#_build#')
    case $name in domains|systhreads) continue ;; esac
    [ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || continue
    off=$(cpu $args)
    row="| $name | $(printf %.2f "$off")"
    for extra in "" ",frames=1" ",stacks=site"; do
      on=$(OCAMLMEMPROF="rate=1,seed=1$extra,out=$tmp/p.json" cpu $args)
      row+=$(printf ' | %.1fx | %s' "$(echo "$on / $off" | bc -l)" "$(stat -c %s "$tmp/p.json")")
    done
    echo "$row |"
  done
