#!/usr/bin/env bash
# base-baselines.sh BASE_REF OUT_DIR [BASELINES_PATH]
#
# Extracts the baselines directory (default `baselines`) exactly as it is in
# commit BASE_REF into OUT_DIR, so a pull request is checked against the base
# branch's baselines rather than the copies the pull request may have edited.
#
# Invariants:
#   - reads only git objects (git archive); never touches the work tree or index;
#   - OUT_DIR must be absent or empty; on success it holds the contents of
#     BASE_REF:BASELINES_PATH and nothing else (empty if the base has none);
#   - if BASE_REF is not in the local clone (shallow checkout), it is fetched
#     from `origin` by sha, nothing else is fetched;
#   - exit 0 on success, 2 on any usage or git error (OUT_DIR may then be partial).
set -euo pipefail

usage() { echo "usage: $0 BASE_REF OUT_DIR [BASELINES_PATH]" >&2; exit 2; }
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then usage; fi
base_ref=$1
out_dir=$2
path=${3:-baselines}
path=${path%/}
if [ -z "$base_ref" ] || [ -z "$out_dir" ] || [ -z "$path" ]; then usage; fi
case "$base_ref" in -*) echo "base-baselines: refusing ref starting with '-': $base_ref" >&2; exit 2 ;; esac
case "$path" in /*|..|../*|*/..|*/../*) echo "base-baselines: baselines path must be inside the repository: $path" >&2; exit 2 ;; esac

if ! git rev-parse --verify --quiet "${base_ref}^{commit}" >/dev/null; then
  # Shallow clones may lack the base commit: fetch just that object.
  echo "base-baselines: $base_ref not present locally; fetching it from origin" >&2
  if ! git fetch --no-tags --quiet --depth=1 origin "$base_ref" ||
     ! git rev-parse --verify --quiet "${base_ref}^{commit}" >/dev/null; then
    echo "base-baselines: cannot resolve base commit $base_ref" >&2
    exit 2
  fi
fi
base_sha=$(git rev-parse --verify "${base_ref}^{commit}")

if [ -e "$out_dir" ]; then
  if [ ! -d "$out_dir" ] || [ -n "$(ls -A "$out_dir")" ]; then
    echo "base-baselines: $out_dir exists and is not an empty directory" >&2
    exit 2
  fi
fi
mkdir -p "$out_dir"

kind=$(git cat-file -t "${base_sha}:${path}" 2>/dev/null || true)
case "$kind" in
  tree) ;;
  "") echo "base-baselines: base $base_sha has no $path/; using an empty baseline set" >&2
      exit 0 ;;
  *) echo "base-baselines: $path in $base_sha is a $kind, not a directory" >&2
     exit 2 ;;
esac

# Archive the subtree itself (tree-ish BASE:PATH) so the files land directly in
# OUT_DIR, without the leading PATH component.
git archive --format=tar "${base_sha}:${path}" | tar -x -f - -C "$out_dir"
count=$(find "$out_dir" -type f | wc -l)
echo "base-baselines: extracted $count file(s) of $path/ from $base_sha into $out_dir" >&2
