#!/bin/sh
# Where a cold create's CPU goes on the GPU host (device tool): `perf record -a -g` over one
# cold create of the real stack with bytecode and one with --no-compile, each from an empty
# store, reported by process and library and by symbol. The host has no perf: carry one with
# its libraries (PERF_DIR: perf and lib/, e.g. this machine's /usr/bin/perf and what ldd
# lists), and ENVBOX_SYMS, the envbox binary of the bundle with its symbols (`strip
# --strip-debug` of build-portable/envbox), so envbox's own functions have names.
# Usage (on the device, from the repository root):
#   PERF_DIR=.device/perf ENVBOX_SYMS=.device/perf/envbox sh bench/device_profile.sh BUNDLE REPACK OUTDIR
set -u
bundle="$1"; repack="$2"; out="$3"
mkdir -p "$out"
exec > "$out/device_profile.txt" 2>&1
. bench/device_common.sh
[ -n "${ENVBOX_SYMS:-}" ] && cp "$ENVBOX_SYMS" "$E"
perf() { LD_LIBRARY_PATH="$PERF_DIR/lib" "$PERF_DIR/perf" "$@"; }
echo 0 > /proc/sys/kernel/kptr_restrict 2>/dev/null
echo -1 > /proc/sys/kernel/perf_event_paranoid 2>/dev/null
mkdir -p /tmp/p/manifests
"$PY" tools/wheelgen.py lock /tmp/p/manifests/pylock.torch.toml /tmp/wh/*.whl
cd /tmp/p
export ENVBOX_PYTHON="$PY"
for mode in bytecode no-compile; do
    flag=; [ "$mode" = no-compile ] && flag=--no-compile
    rm -rf /tmp/hc; sync
    echo "== $mode"
    perf record -q -a -g -F 199 -o /tmp/perf.$mode -- "$E" --home /tmp/hc -vv create torch --lock /tmp/p/manifests/pylock.torch.toml $flag 2>&1 |
        grep -E "seconds|bytecode:|rror|perf"
    echo "-- by process and library"
    perf report -i /tmp/perf.$mode --no-children --sort comm,dso --stdio -g none 2>/dev/null | grep -v '^#' | grep . | head -25
    echo "-- by symbol"
    perf report -i /tmp/perf.$mode --no-children --sort comm,dso,sym --stdio -g none 2>/dev/null | grep -v '^#' | grep . | head -70
    echo "-- kernel, with callers"
    perf report -i /tmp/perf.$mode --no-children --sort sym --dsos '[kernel.kallsyms]' --stdio -g caller,0.5,callee --percent-limit 1.5 2>/dev/null | grep -v '^#' | grep . | head -150
done
echo "== done"
