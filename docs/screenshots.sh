#!/usr/bin/env bash
# Regenerates the README's screenshots with headless Chromium (Debian's
# chromium package; `apt-get install chromium`):
#   docs/report.png  the report of the shipped recording captures/findings
#   docs/diff.png    the diff page of `llmrec demo --diff` (two simulated
#                    configurations recorded for 32 s: it changes a little
#                    from one run to the next)
# Each is the first 1400 × 1800 pixels of the page. Run from anywhere in the
# repository: ./docs/screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "screenshots: no $chromium (apt-get install chromium, or set CHROMIUM)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/llmrec" ./cmd/llmrec

shoot() { # shoot PAGE PNG
  "$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1400,1800 --virtual-time-budget=5000 \
    --screenshot="$2" "file://$1" 2> "$work/chromium.log" ||
    { cat "$work/chromium.log" >&2; exit 1; }
  [ -s "$2" ] || { echo "screenshots: $2 was not written" >&2; exit 1; }
  echo "wrote $2"
}

"$work/llmrec" render captures/findings/run -o "$work/report.html" --quiet
shoot "$work/report.html" docs/report.png

# From inside the temporary folder, so the page names the runs demo-diff/...
(cd "$work" && ./llmrec demo --diff -o demo-diff > demo.log 2>&1) ||
  { cat "$work/demo.log" >&2; exit 1; }
shoot "$work/demo-diff/diff.html" docs/diff.png
