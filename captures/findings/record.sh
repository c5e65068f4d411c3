#!/usr/bin/env bash
# Records the "findings" capture: llmrec sim serves scenario.toml on loopback,
# llmrec record scrapes both engines every second for 120 s, and the recorder
# itself is paused (SIGSTOP) for 15 s from 40 s on. Writes run/ (the
# recording, as llmrec record wrote it) and truth.jsonl (the simulator's
# truth log). Run from anywhere: bash captures/findings/record.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -C "$here/../.." -o "$tmp/llmrec" ./cmd/llmrec
rm -rf "$here/run" "$here/truth.jsonl"
"$tmp/llmrec" sim -scenario "$here/scenario.toml" -truth "$here/truth.jsonl" -duration 130s > "$tmp/urls" &
for _ in $(seq 50); do [ "$(wc -l < "$tmp/urls")" -ge 2 ] && break; sleep 0.1; done
url() { awk -v n="$1" '$1==n {print $2}' "$tmp/urls"; }
"$tmp/llmrec" record --out "$here/run" --interval 1s --duration 120s --quiet \
  --target "vllm-0=$(url vllm-0)" --target "llamacpp-0=$(url llamacpp-0)" &
rec=$!
sleep 40
kill -STOP "$rec"
sleep 15
kill -CONT "$rec"
wait "$rec"
gzip -9 -n "$here/truth.jsonl"
echo "recorded into $here/run"
