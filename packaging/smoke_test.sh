#!/usr/bin/env bash
# Smoke test of a built bundle: packaging/smoke_test.sh dist/fxstudio/fxstudio
#
# Runs the binary as a user would, from a scratch folder (not the checkout) with a scratch HOME, on
# Qt's offscreen platform: --help, inspect, apply -o (export + verification in a fresh process of
# the bundle), compare (and which difference pass ran: the numba kernel or the numpy fallback),
# --screenshot of the built-in example; and, where xvfb-run exists, the window on the xcb platform.
# Exit 0 when every check passed.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 path/to/bundle/fxstudio (an executable)" >&2
    exit 2
fi
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EXAMPLE="$ROOT/resources/examples/residual_cnn.py"
EDITS="$ROOT/packaging/smoke_edits.json"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fxstudio-smoke.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/home" "$WORK/out"
export HOME="$WORK/home" XDG_CONFIG_HOME="$WORK/home/.config" XDG_CACHE_HOME="$WORK/home/.cache" \
    XDG_STATE_HOME="$WORK/home/.local/state" XDG_DATA_HOME="$WORK/home/.local/share"
export NUMBA_CACHE_DIR="$WORK/numba-cache"  # empty: a kernel found here afterwards was compiled by this run
export QT_QPA_PLATFORM=offscreen
cd "$WORK"

failures=0
log="$WORK/step.log"
now() { date +%s.%N; }

# check NAME PATTERN COMMAND...: run COMMAND, pass when it exits 0 and its output matches PATTERN.
check() {
    local name=$1 pattern=$2 start status=0
    shift 2
    start=$(now)
    "$@" >"$log" 2>&1 || status=$?
    local seconds
    seconds=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    if [ "$status" -eq 0 ] && grep -Eq -- "$pattern" "$log"; then
        printf 'ok    %-34s %5s s  %s\n' "$name" "$seconds" "$(grep -E -m1 -- "$pattern" "$log" | cut -c1-90)"
    else
        printf 'FAIL  %-34s %5s s  (exit %s; output below)\n' "$name" "$seconds" "$status"
        sed 's/^/      | /' "$log" | tail -25
        failures=$((failures + 1))
    fi
}

echo "smoke test of $BIN (bundle $(du -sh "$(dirname "$BIN")" | cut -f1))"
check "--help" "^usage: fxstudio" "$BIN" --help
grep -q "Subcommands: inspect" "$log" || { echo "FAIL  --help lists no subcommands"; failures=$((failures + 1)); }
check "inspect residual_cnn.py" "^lint: ok" "$BIN" inspect "$EXAMPLE"
grep -Eq "^layer1_0_conv1 +call_module" "$log" || { echo "FAIL  inspect printed no node table"; failures=$((failures + 1)); }
check "apply edits -o (export, verified)" "^verified: " "$BIN" apply "$EXAMPLE" "$EDITS" -o "$WORK/out/residual_edited.py"
[ -s "$WORK/out/residual_edited.py" ] && [ -s "$WORK/out/residual_edited.weights.pt" ] \
    || { echo "FAIL  apply -o wrote no .py/.weights.pt"; failures=$((failures + 1)); }
check "export (no edits, verified)" "^verified: " "$BIN" export "$EXAMPLE" -o "$WORK/out/residual_plain.py"
check "compare with the edit script" "^first divergence: node add" "$BIN" compare "$EXAMPLE" "$EDITS" --repeats 1
# HOME and NUMBA_CACHE_DIR are empty scratch folders: a compiled kernel in either came from compare.
kernel_index=$(find "$NUMBA_CACHE_DIR" "$HOME" -name '_fused_kernel.fused-*.nbi' 2>/dev/null | head -1 || true)
if [ -n "$kernel_index" ]; then
    echo "      compare ran the numba kernel (it compiled it into ${kernel_index#"$WORK"/})"
else
    echo "      compare ran the numpy fallback (numba's kernel did not load in the bundle)"
fi
check "numba kernel loads (warm_up)" "^kernel: numba" "$BIN" --fxstudio-python-c \
    "from fxstudio.core.compare import fused_diff; print('kernel:', 'numba' if fused_diff.warm_up() else 'numpy fallback')"
check "--screenshot (built-in example)" "wrote .*x.png" "$BIN" --screenshot "$WORK/out/x.png"
if [ "$(head -c 8 "$WORK/out/x.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]; then
    echo "FAIL  --screenshot did not write a PNG"; failures=$((failures + 1))
fi

if command -v xvfb-run >/dev/null 2>&1; then
    # The window itself on X11 (Xvfb): the xcb platform plugin loads, the model opens, the icon is set.
    check "window on xcb (Xvfb)" "^xcb icon 52$" xvfb-run -a env QT_QPA_PLATFORM=xcb "$BIN" --fxstudio-python-c "
from PySide6.QtCore import QTimer
from fxstudio.qt.launch import make_app, start_window
app = make_app()
window = start_window('$EXAMPLE', {'tracer': None, 'input_shapes': None, 'trust': False})
QTimer.singleShot(5000, app.quit)
app.exec()
doc = window.document
print(app.platformName(), 'icon' if not app.windowIcon().isNull() else 'no icon',
      len(doc.module().graph.nodes) if doc is not None else 'no model')
"
else
    echo "skip  window on xcb: xvfb-run is not installed"
fi

if [ "$failures" -ne 0 ]; then
    echo "smoke test: $failures check(s) failed"
    exit 1
fi
echo "smoke test: all checks passed"
