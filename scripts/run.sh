#!/usr/bin/env bash
# The main job on this machine: set up, then a complete local campaign --
# collect (server, client and client-node ceilings) + validate, for both
# metrics (rpc, bw), with short durations (about a minute and a half) --
# then the model and the report. The machine's cores are split into logical
# nodes (2 cores -> 2 nodes of 1 core; 3 or more -> 3 nodes); collect says
# first, in one line, whether that split can locate the ridge.
# RESULTS=DIR picks the results folder (default ./rooftop-results); extra
# arguments go to 'rooftop collect' (see .venv/bin/rooftop collect --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
results="${RESULTS:-./rooftop-results}"
# 2 s windows, 6 per round. Bulk clients walk a 256 MiB buffer (the default
# 1 GiB, far beyond any cache too, takes ~1 s per client to populate here).
short=(--duration 2 --warmup 0.3 --windows 6 --results "$results")
collect_only=(--set bw.stream_size=256MiB)
run=$(.venv/bin/rooftop collect "${short[@]}" "${collect_only[@]}" "$@")
.venv/bin/rooftop validate "$run" "${short[@]}" >/dev/null
.venv/bin/rooftop model "$run" --results "$results"
report=$(.venv/bin/rooftop report "$run" --results "$results")
cat <<TXT

run $run is in $results/ (rooftop.db, and $results/$run/ for every engine document).
  .venv/bin/rooftop export $run --format csv --results $results    # the samples
  .venv/bin/rooftop compare $run examples/aurora-table2.json --results $results
  .venv/bin/rooftop --help                                         # more

report: $report
TXT
