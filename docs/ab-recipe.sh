#!/usr/bin/env bash
# README.md "A/B-test an engine change", runnable: the lines after the first
# blank line are README's recipe block, character for character (checked by
# TestREADMERecipe in cmd/llmrec). .ci/ab-recipe runs it against the
# simulator and checks its verdict. Run it in an empty folder, llmrec on PATH.
set -euo pipefail

rm -rf runs && mkdir runs
# The two engines to compare. Here simulated vLLM engines whose step (a token for
# every request in the batch) takes 15 ms on the baseline and 20 ms on the candidate.
printf '[[engine]]\nname = "v"\nformat = "vllm"\n[engine.serve]\nstep = "15ms"\n' > runs/base.toml
printf '[[engine]]\nname = "v"\nformat = "vllm"\n[engine.serve]\nstep = "20ms"\n' > runs/cand.toml

for side in base cand; do
  # The engine. Against real engines: start this side's build or config instead.
  llmrec sim -scenario runs/$side.toml --listen v=127.0.0.1:8100 > runs/$side-sim.txt & sim=$!
  # The recorder, polling every 500 ms, with the endpoint the load marks its phases on.
  llmrec record --out runs/$side --interval 500ms --mark-listen 127.0.0.1:9464 \
    --target v=http://127.0.0.1:8100/metrics 2> runs/$side-record.log & rec=$!
  until [ -s runs/$side-sim.txt ] && grep -q '^marks:' runs/$side-record.log; do sleep 0.2; done
  # The sweep: a 5 s warmup, then 30 s at 2 and 30 s at 8 requests in flight, each marked.
  llmrec load --url http://127.0.0.1:8100 --stages 2:30s,8:30s --warmup 5s --output-tokens 100 \
    --mark http://127.0.0.1:9464/mark -o runs/$side-client.jsonl
  kill $rec && wait $rec    # the recorder seals its last segment and exits 0
  kill $sim && wait $sim
done

# A report per side: runs/base/report.html and runs/base/summary.md, the same for cand.
llmrec render runs/base --client runs/base-client.jsonl
llmrec render runs/cand --client runs/cand-client.jsonl

# The comparison. The CI line: exit 1 when a row is worse beyond its threshold.
llmrec diff runs/base -- runs/cand \
  --client-base runs/base-client.jsonl --client-cand runs/cand-client.jsonl \
  --md runs/diff.md -o runs/diff.html --json runs/diff.json --fail-on worse
