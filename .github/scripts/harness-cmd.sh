#!/usr/bin/env bash
# shellcheck disable=SC2034
# harness-cmd.sh: sourced (not run) by profile.sh, record-run.sh and
# render-history.sh; sets the array `harness` to the memprof-ci command they
# run. $MEMPROF_CI, when set, is that command; otherwise `env
# PYTHONPATH=$MEMPROF_CI_HARNESS $MEMPROF_CI_PYTHON -m memprof_ci`, by default
# this checkout's harness/ and Debian's /usr/bin/python3.
#
# Invariants: defines `harness` and nothing else; reads `$here`, the sourcing
# script's directory; runs nothing.
if [ -n "${MEMPROF_CI:-}" ]; then
  harness=("$MEMPROF_CI")
else
  harness=(env "PYTHONPATH=${MEMPROF_CI_HARNESS:-$(cd "$here/../.." && pwd)/harness}"
           "${MEMPROF_CI_PYTHON:-/usr/bin/python3}" -m memprof_ci)
fi
