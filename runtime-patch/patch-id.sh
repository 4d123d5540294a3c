#!/usr/bin/env bash
# Print the identity of the runtime patch for one OCaml release
# ($OCAML_VERSION, else patches/default-version): a short sha256 over the
# release's name and every file that goes into its patched build (our C
# files, the release's series and the patches it lists, and the scripts
# that fetch and build), in a fixed order, so that the same inputs always
# give the same id on any machine, and two releases never share one.
set -euo pipefail
cd "$(dirname "$0")"
version=${OCAML_VERSION:-$(cat patches/default-version)}
[ -f "patches/$version/series" ] || { echo "patch-id: OCaml $version has no series" >&2; exit 2; }
{
  echo "ocaml $version"
  { find src -type f -print0
    printf '%s\0' build-runtime.sh fetch-source.sh "patches/$version/series"
    grep -v '^#' "patches/$version/series" | sed '/^$/d; s|^|patches/|' | tr '\n' '\0'
  } | LC_ALL=C sort -z | xargs -0 sha256sum
} | sha256sum | cut -c1-16
