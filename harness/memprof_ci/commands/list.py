"""`memprof-ci list`: the manifest's benchmark names (of one shard), sorted."""

from __future__ import annotations

from ..inputs.manifest import load_manifest, selected_benchmarks


def run(args) -> int:
    man = load_manifest(args.manifest)
    benches, _, _ = selected_benchmarks(man, args.shard)
    for b in sorted(benches, key=lambda b: b.name):
        print(b.name)
    return 0
