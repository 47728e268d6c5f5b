#!/usr/bin/env bash
# The wheel on a system that has nothing of rat-py's: a debootstrapped Debian
# 13 (trixie) root with only python3 and python3-venv (no compiler, no libzmq,
# no libmicrohttpd), a wheelhouse prepared here (the repaired wheel and
# ipykernel's wheels for the root's Python 3.13), and there, as a user would:
# a venv, `pip install --no-index rat-py`, `rat-py doctor` and a stdio run.
# By hand, as root, after integration.wheel has made the wheel:
#   tests/wheel/portability.sh BUILD_DIR     (e.g. build/dev)
# Everything goes under BUILD_DIR/wheel/portability; the root is made once
# (some minutes of Debian downloads) and kept. Not in scripts/test: the
# debootstrap alone is over the three minutes a test may cost. Its last
# result is in doc/packaging.md.
set -euo pipefail
build=$(realpath "${1:?usage: $0 BUILD_DIR}")
here=$(dirname "$(realpath "$0")")
w=$build/wheel
p=$w/portability
wheel=$(ls "$w"/house/rat_py-*-manylinux_*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "no repaired wheel in $w/house: run ctest -L wheel first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "debootstrap and chroot need root" >&2; exit 2; }
mkdir -p "$p"
if [ ! -x "$p/root/usr/bin/python3" ]; then
    command -v debootstrap >/dev/null || apt-get install -y -qq debootstrap
    rm -rf "$p/root"
    debootstrap --variant=minbase --include=python3,python3-venv trixie "$p/root" http://deb.debian.org/debian
fi
# ipykernel and what it needs, as wheels for the root's CPython.
pyver=$(chroot "$p/root" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
ipk=$(sed -n 's/^# test venv: //p' "$here/requirements.txt")
plats=()
for v in 35 34 31 28 27 26 24 17 5; do plats+=(--platform "manylinux_2_${v}_x86_64"); done
plats+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any)
rm -rf "$p/root/wheelhouse"
"$w/tools/bin/pip" --cache-dir "$w/pip-cache" download -q -d "$p/root/wheelhouse" --python-version "$pyver" \
    --implementation cp --abi "cp${pyver/./}" --abi abi3 --abi none --only-binary=:all: "${plats[@]}" "$ipk"
cp "$wheel" "$p/root/wheelhouse/"
cat > "$p/root/check.sh" <<'IN'
set -eu
cd /root
rm -rf venv work && mkdir work
python3 -m venv venv
t0=$(date +%s%N)
venv/bin/pip install -q --no-index --find-links /wheelhouse rat-py
echo "install: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
for lib in libzmq.so.5 libmicrohttpd.so.12 libcurl.so.4; do
    ls /usr/lib/x86_64-linux-gnu/$lib >/dev/null 2>&1 && echo "system has $lib" || echo "system lacks $lib"
done
export HOME=/root/work PATH=/root/venv/bin:/usr/bin:/bin
cd /root/work && /root/venv/bin/rat-py doctor
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run","arguments":{"code":"import sys; print(6 * 7, sys.prefix)"}}}' \
  | { cat; sleep 15; } | /root/venv/bin/rat-py --cwd /root/work > /root/work/out.jsonl
grep -o '"text":"42 /root/venv' /root/work/out.jsonl
IN
unshare --mount --pid --fork sh -c "mount --bind /dev '$p/root/dev' && mount -t proc proc '$p/root/proc' && exec chroot '$p/root' /usr/bin/env -i PATH=/usr/bin:/bin sh /check.sh"
echo "portability: PASSED (Debian 13 root with python3 and python3-venv only; $(basename "$wheel"))"
