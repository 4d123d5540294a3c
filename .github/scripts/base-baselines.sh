#!/usr/bin/env bash
# base-baselines.sh [--manifest MANIFEST_PATH MANIFEST_OUT] REF OUT_DIR [BASELINES_PATH]
#
# Extracts the baselines directory (default `baselines`) exactly as it is in
# commit REF into OUT_DIR and, with --manifest, the manifest file
# REF:MANIFEST_PATH into MANIFEST_OUT. On a pull request REF is the base
# commit, so the check compares against the base branch's baselines and
# settings rather than the copies the pull request may have edited; the judge
# (judge.sh) also uses it on the tested commit to read the pull request's
# proposed copies as data.
#
# Invariants:
#   - reads only git objects (git ls-tree, git cat-file blob); never touches
#     the work tree or index, never runs anything from REF; no git attribute
#     applies (no git archive: `export-ignore` or `export-subst` in a
#     .gitattributes of REF cannot hide or rewrite a baseline);
#   - OUT_DIR must be absent or empty; on success it holds the contents of
#     REF:BASELINES_PATH and nothing else (empty if REF has none); OUT_DIR `-`
#     (with --manifest) extracts the manifest only;
#   - a baselines directory holds baselines only: regular files named
#     NAME.json, NAME a benchmark name (a letter or digit, then letters,
#     digits, `_`, `.`, `-`). Anything else in REF:BASELINES_PATH (a
#     subdirectory, a symlink, a submodule, a dot file such as .gitattributes,
#     another name) is an error naming it, and nothing is written; so is a
#     manifest that is not a regular file: a planted link cannot make the
#     harness read another file;
#   - MANIFEST_OUT is written only if REF has MANIFEST_PATH (a message says so
#     otherwise, exit 0): the caller decides what a missing manifest means;
#   - if REF is not in the local clone (shallow checkout), it is fetched
#     from `origin` by sha, nothing else is fetched;
#   - exit 0 on success, 2 on any usage or git error (outputs may then be partial).
set -euo pipefail
# Byte-wise character ranges in the name patterns below.
export LC_ALL=C

usage() { echo "usage: $0 [--manifest MANIFEST_PATH MANIFEST_OUT] REF OUT_DIR [BASELINES_PATH]" >&2; exit 2; }
manifest_path=
manifest_out=
if [ "${1:-}" = --manifest ]; then
  [ "$#" -ge 3 ] || usage
  manifest_path=$2
  manifest_out=$3
  shift 3
  if [ -z "$manifest_path" ] || [ -z "$manifest_out" ]; then usage; fi
fi
if [ "$#" -lt 2 ] || [ "$#" -gt 3 ]; then usage; fi
base_ref=$1
out_dir=$2
path=${3:-baselines}
path=${path%/}
if [ -z "$base_ref" ] || [ -z "$out_dir" ] || [ -z "$path" ]; then usage; fi
case "$base_ref" in -*) echo "base-baselines: refusing ref starting with '-': $base_ref" >&2; exit 2 ;; esac
for p in "$path" "$manifest_path"; do
  case "$p" in /*|..|../*|*/..|*/../*) echo "base-baselines: path must be inside the repository: $p" >&2; exit 2 ;; esac
done

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

if [ -n "$manifest_path" ]; then
  # `git ls-tree` gives the mode: only a regular file (100644/100755) is a manifest.
  entry=$(git ls-tree "$base_sha" -- "$manifest_path")
  if [ -z "$entry" ]; then
    echo "base-baselines: $base_sha has no $manifest_path" >&2
  else
    mode=${entry%% *}
    case "$mode" in
      100644|100755) ;;
      *) echo "base-baselines: $manifest_path in $base_sha is not a regular file (mode $mode)" >&2; exit 2 ;;
    esac
    mkdir -p "$(dirname "$manifest_out")"
    git cat-file blob "${base_sha}:${manifest_path}" >"$manifest_out"
    echo "base-baselines: extracted $manifest_path of $base_sha into $manifest_out" >&2
  fi
fi

if [ "$out_dir" = - ]; then
  [ -n "$manifest_path" ] || usage
  exit 0
fi
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
  "") echo "base-baselines: $base_sha has no $path/; using an empty baseline set" >&2
      exit 0 ;;
  *) echo "base-baselines: $path in $base_sha is a $kind, not a directory" >&2
     exit 2 ;;
esac

# Read the tree object itself, one entry at a time (-z: any name comes
# through whole); every entry must be a baseline before anything is written.
listing=$(mktemp)
trap 'rm -f "$listing"' EXIT
git ls-tree -z "${base_sha}:${path}" >"$listing" ||
  { echo "base-baselines: cannot list $path/ in $base_sha" >&2; exit 2; }
names=()
blobs=()
odd=()
while IFS= read -r -d '' entry; do
  meta=${entry%%$'\t'*}
  name=${entry#*$'\t'}
  read -r mode type object <<<"$meta"
  if [[ ( "$mode" = 100644 || "$mode" = 100755 ) && "$type" = blob &&
        "$name" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*\.json$ ]]; then
    names+=("$name")
    blobs+=("$object")
  elif [[ "$mode" = 100644 && "$type" = blob && "$name" = .gitkeep ]]; then
    :  # what `memprof-ci init` leaves in an empty baselines directory; not copied
  else
    odd+=("$(printf '%s %s %q' "$mode" "$type" "$name")")
  fi
done <"$listing"
if [ "${#odd[@]}" -gt 0 ]; then
  shown=$(printf '%s, ' "${odd[@]:0:10}")
  if [ "${#odd[@]}" -gt 10 ]; then shown+="and $(( ${#odd[@]} - 10 )) more, "; fi
  echo "base-baselines: $path/ in $base_sha holds ${#odd[@]} entr(ies) that are not baselines (regular files NAME.json): ${shown%, }" >&2
  exit 2
fi
for i in "${!names[@]}"; do
  git cat-file blob "${blobs[$i]}" >"$out_dir/${names[$i]}" ||
    { echo "base-baselines: cannot read $path/${names[$i]} of $base_sha" >&2; exit 2; }
done
echo "base-baselines: extracted ${#names[@]} file(s) of $path/ from $base_sha into $out_dir" >&2
