#!/usr/bin/env bash
# Makes the venvs of the real peers (tests/peers.txt) under DIR (default
# build/peers of the source tree): DIR/eg, DIR/lab, each from Debian's
# /usr/bin/python3 without system site-packages, with exactly the pinned
# lines of tests/peers.txt for it (pip --no-deps, then pip check), pip's
# cache in DIR/../pip-cache. A venv whose pinned lines are unchanged since
# it was made (kept in DIR/VENV/peers.pins) is kept as it is: the second run
# costs nothing. Several build trees (scripts/test's build/test, build/asan)
# share one DIR; a lock keeps two runs from making the same venv at once.
#   tests/peers/setup.sh [DIR]
# Prints what it did and how long it took; exits non-zero (with pip's
# output) when a venv cannot be made.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
pins=$src/tests/peers.txt
dir=${1:-$src/build/peers}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$(dirname "$dir")/pip-cache}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
exec 9>"$dir/.lock"
flock 9
for v in $(awk '!/^#/ && NF { print $1 }' "$pins" | sort -u); do
    want=$(awk -v v="$v" '$1 == v { print $2 }' "$pins")
    venv=$dir/$v
    if [ -f "$venv/peers.pins" ] && [ "$(cat "$venv/peers.pins")" = "$want" ]; then
        echo "peers: $venv is up to date ($(echo "$want" | wc -l) pins)"
        continue
    fi
    t0=$SECONDS
    rm -rf "$venv"
    /usr/bin/python3 -m venv "$venv"
    echo "$want" > "$venv/requirements.txt"
    if ! "$venv/bin/pip" install --quiet --no-deps --only-binary=:all: -r "$venv/requirements.txt" > "$venv/pip.log" 2>&1 ||
       ! "$venv/bin/pip" check >> "$venv/pip.log" 2>&1; then
        cat "$venv/pip.log" >&2
        echo "peers: could not make $venv from tests/peers.txt (pip's output above)" >&2
        exit 1
    fi
    echo "$want" > "$venv/peers.pins"
    echo "peers: made $venv ($(echo "$want" | wc -l) pins, $(du -sm "$venv" | cut -f1) MB) in $((SECONDS - t0)) s"
done
