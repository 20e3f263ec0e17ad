#!/usr/bin/env bash
# make demo: start the built-in simulator on a free loopback port, run the quickstart sweep
# against it (replay, capture, aggregate, report), stop the simulator (run says where the report is).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/wirebench}
OUT=${OUT:-runs/demo}
mkdir -p "$(dirname "$OUT")"
urlfile=$(mktemp)
"$BIN" sim --listen 127.0.0.1:0 --config examples/sim-demo.yaml >"$urlfile" 2>"$OUT.sim.log" &
sim=$!
stop_sim() { kill -INT "$sim" 2>/dev/null || true; wait "$sim" 2>/dev/null || true; rm -f "$urlfile"; }
trap stop_sim EXIT
for _ in $(seq 200); do
	[ -s "$urlfile" ] && break
	kill -0 "$sim" 2>/dev/null || { echo "wirebench sim failed to start: see $OUT.sim.log" >&2; exit 1; }
	sleep 0.05
done
url=$(head -n 1 "$urlfile")
echo "simulator listening at $url (engine model: examples/sim-demo.yaml)"
rm -rf "$OUT"
# run ends with the report's path: report: $OUT/report/index.html (summary.md beside it)
"$BIN" run examples/quickstart.yaml -o "$OUT" --target "$url"
