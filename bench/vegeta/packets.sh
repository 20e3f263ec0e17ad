#!/bin/bash
# packets.sh: what each client's sending and reading does to the server. vegeta's CLI,
# `wirebench capture` (defaults) and `wirebench capture` at the send times of vegeta's run just
# before (its results' timestamps replayed as a trace) alternate against one `wirebench sim`
# (no CPU cost) at RATE req/s with TOKENS output tokens. Over 2 s from each run's third second
# it prints, per request planned:
#
#   acks/req             pure ACKs the client sent the server (tcpdump on lo)
#   server-segs/req      segments with data the server sent the client
#   client-cpu/req       task-clock of the client's processes (wirebench: coordinator, workers)
#   server-cpu/req       task-clock of the simulator
#   server-switches/req  the simulator's context switches: voluntary (a thread slept) and
#                        involuntary (a thread was preempted), from /proc/PID/task/*/status
#
# and, for vegeta, the share of its sends that came under 50 µs after the one before.
# vegeta's pacer sleeps on Go timers and sends in clumps; a server sleeps less often under
# clumps. Linux acknowledges from the reading thread when a read empties the socket after two
# or more small segments (tcp_cleanup_rbuf): a client that reads every event as it arrives
# sends more ACKs. Figures in docs/measurements.md ("The server at vegeta's own send times").
#
# Needs root, tcpdump, perf and vegeta's CLI (VEGETA, default ~/go/bin/vegeta: `go install
# github.com/tsenart/vegeta/v12@v12.13.0`). Usage, from the repository root after `make build`:
#
#   RATE=1000 TOKENS=64 ROUNDS=3 bench/vegeta/packets.sh
set -euo pipefail
WB=${WB:-$PWD/bin/wirebench}
VEGETA=${VEGETA:-$HOME/go/bin/vegeta}
RATE=${RATE:-1000} TOKENS=${TOKENS:-64} ROUNDS=${ROUNDS:-3} PORT=${PORT:-18080}
for t in "$WB" "$VEGETA" tcpdump perf; do
	command -v "$t" >/dev/null || { echo "packets.sh: $t not found" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'kill $SIM 2>/dev/null; rm -rf "$dir"' EXIT
cd "$dir"
body='{"model":"sim","prompt":"a b c d e f g h i j k l m n o p","max_tokens":'$TOKENS',"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}'
echo "$body" >body.json
printf 'POST http://127.0.0.1:%s/v1/completions\nContent-Type: application/json\n@%s/body.json\n' "$PORT" "$dir" >targets.txt
cat >cfg.yaml <<EOF
name: packets
seed: 1
target: {url: "http://127.0.0.1:$PORT", api: completions, model: sim, ignore_eos: true, timeout: 30s}
load:
  stages: [{rate: $RATE, duration: 6s, arrival: constant}]
workload:
  synthetic: {input: {kind: fixed, value: 16}, output: {kind: fixed, value: $TOKENS}}
tokenizer: whitespace
EOF
cat >trace.yaml <<EOF
name: packets-at-vegeta-times
seed: 1
target: {url: "http://127.0.0.1:$PORT", api: completions, model: sim, ignore_eos: true, timeout: 30s}
workload:
  trace: {format: azure, file: $dir/trace.csv}
tokenizer: whitespace
EOF

# vegeta_times: the send times of vegeta's last run (its results' timestamps) as an Azure trace,
# and in gaps.txt how many came under 50 µs after the one before (awk's doubles keep the Unix
# nanosecond times to 256 ns).
vegeta_times() {
	"$VEGETA" encode --to csv <res.bin | cut -d, -f1 | sort -n >sent.txt
	awk 'NR > 1 { n++; if ($1 - p < 50000) b++ } { p = $1 }
		END { printf "%.0f%% of sends under 50us after the one before (plan: every %dus)\n", 100 * b / n, 1e6 / '"$RATE"' }' sent.txt >gaps.txt
	awk -v tok="$TOKENS" '
		NR == 1 { t0 = $1; print "TIMESTAMP,ContextTokens,GeneratedTokens" }
		{ d = $1 - t0; s = int(d / 1e9); printf "2026-01-01 00:%02d:%02d.%09d,16,%d\n", int(s / 60), s % 60, d - s * 1e9, tok }' sent.txt >trace.csv
}

# capture CFG LABEL: one wirebench capture of the plan CFG, with its figures.
capture() {
	rm -rf run && "$WB" replay "$1" -o run >/dev/null 2>&1
	"$WB" capture run --quiet >/dev/null 2>&1 &
	local cap=$! pids
	sleep 3
	pids=$( (pgrep -f "$(basename "$WB") --log-level info --log-format text worker"; echo $cap) | paste -sd,)
	echo "$2 $(window "$pids")"
	wait $cap
}

"$WB" sim --listen 127.0.0.1:$PORT --mode fixed --ttft 0 --itl 0 >sim.log 2>&1 &
SIM=$!
sleep 1

# switches PID: the voluntary and involuntary context switches of PID's threads so far.
switches() {
	cat /proc/$1/task/*/status | awk '/^voluntary/ { v += $2 } /^nonvoluntary/ { n += $2 } END { print v, n }'
}

# window PIDS: the figures over 2 s for the client processes PIDS (comma-separated).
window() {
	tcpdump -i lo -nn -q "tcp port $PORT" -w dump.pcap >/dev/null 2>&1 &
	local dump=$! v0 n0 v1 n1
	read -r v0 n0 < <(switches $SIM)
	perf stat -e task-clock,context-switches -p $SIM -x, -o server.txt -- sleep 2 >/dev/null 2>&1 &
	local srv=$!
	perf stat -e task-clock -p "$1" -x, -o client.txt -- sleep 2 >/dev/null 2>&1
	wait $srv
	read -r v1 n1 < <(switches $SIM)
	kill $dump
	wait $dump 2>/dev/null || true
	local c s w
	c=$(grep task-clock client.txt | cut -d, -f1)
	s=$(grep task-clock server.txt | cut -d, -f1)
	w=$(grep context-switches server.txt | cut -d, -f1)
	tcpdump -r dump.pcap -nn 2>/dev/null | awk -v n=$((2 * RATE)) -v p=".$PORT:" -v c="$c" -v s="$s" -v w="$w" -v vol=$((v1 - v0)) -v inv=$((n1 - n0)) '
		substr($5, length($5) - length(p) + 1) == p { if ($NF == 0) acks++; next }
		$NF != 0 { segs++ }
		END { printf "acks/req %.1f server-segs/req %.1f client-cpu/req %.0fus server-cpu/req %.0fus server-switches/req %.2f (%.2f voluntary, %.2f involuntary)\n",
			acks / n, segs / n, c * 1000 / n, s * 1000 / n, w / n, vol / n, inv / n }'
}

for i in $(seq 1 "$ROUNDS"); do
	"$VEGETA" attack -targets targets.txt -rate "$RATE" -duration 6s >res.bin &
	va=$!
	sleep 3
	echo "vegeta    $(window "$(pgrep -f "$VEGETA attack" | head -1)")"
	wait $va
	vegeta_times
	echo "          vegeta: $(cat gaps.txt)"
	capture cfg.yaml "wirebench"
	capture trace.yaml "wirebench at vegeta's send times"
done
