#!/usr/bin/env bash
# By-hand measure of issue 26's loopback row: a small JSON handler alone
# against the same handler behind middleware.Require with a warm cache, both
# served by one process (scripts/protected-loopback) on 127.0.0.1 and loaded
# by wrk on the same host, in interleaved rounds (handler first in odd
# rounds, protected first in even ones), so that the machine's other load
# falls on both sides alike. It prints each round's requests/s and p99 per
# side, then the medians of the per-round ratios: protected / handler
# requests/s (target ≥ 0.95) and p99 (target ≤ 1.1). Not part of CI.
#
#   apt-get install -y wrk                  # once
#   scripts/protected-loopback.sh           # ROUNDS=5 SECONDS_PER_RUN=10 THREADS=2 CONNS=16
#
# The target is built from the working tree into a temporary directory;
# TARGET_BIN=path runs a target built elsewhere (another tree, for a before-and-after) instead. The
# script stops the one process it started.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-5}
secs=${SECONDS_PER_RUN:-10}
threads=${THREADS:-2}
conns=${CONNS:-16}

command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install -y wrk)" >&2; exit 2; }
work=$(mktemp -d /tmp/protected-loopback.XXXXXX)
pid=
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

bin=${TARGET_BIN:-}
if [ -z "$bin" ]; then
	echo "building the target into $work ..." >&2
	go build -o "$work/target" ./scripts/protected-loopback
	bin=$work/target
fi
"$bin" -token-file "$work/token" >"$work/out" 2>&1 &
pid=$!
for _ in $(seq 1 100); do grep -q '^ready ' "$work/out" && break; sleep 0.1; done
read -r _ handler protected < <(grep '^ready ' "$work/out") || { cat "$work/out" >&2; exit 1; }
# The token reaches wrk through a script that reads its file, not on a
# command line that ps shows.
cat >"$work/auth.lua" <<LUA
local f = assert(io.open("$work/token"))
wrk.headers["Authorization"] = "Bearer " .. f:read("*a")
f:close()
LUA

# run PORT SECONDS: prints "requests/s p99-µs"
run() {
	wrk -t"$threads" -c"$conns" -d"$2"s --latency -s "$work/auth.lua" "http://127.0.0.1:$1/orders/42" >"$work/wrk" 2>&1
	if grep -q 'Non-2xx' "$work/wrk"; then cat "$work/wrk" >&2; echo "non-2xx answers" >&2; exit 1; fi
	awk '/^Requests\/sec:/ {rps=$2}
	     $1 == "99%" {v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
	                  f = (u == "us") ? 1 : (u == "ms") ? 1000 : (u == "s") ? 1000000 : 0.001; p99 = v * f}
	     END {printf "%s %.0f\n", rps, p99}' "$work/wrk"
}

run "$handler" 2 >/dev/null; run "$protected" 2 >/dev/null # warm the cache and the connections
echo "round  load  handler-req/s  protected-req/s  rate-ratio  handler-p99-us  protected-p99-us  p99-ratio"
ratios=() p99s=()
for r in $(seq 1 "$rounds"); do
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ $((r % 2)) -eq 1 ]; then
		read -r hr hp < <(run "$handler" "$secs"); read -r pr pp < <(run "$protected" "$secs")
	else
		read -r pr pp < <(run "$protected" "$secs"); read -r hr hp < <(run "$handler" "$secs")
	fi
	rr=$(awk -v a="$pr" -v b="$hr" 'BEGIN {printf "%.3f", a / b}')
	pr99=$(awk -v a="$pp" -v b="$hp" 'BEGIN {printf "%.3f", a / b}')
	ratios+=("$rr") p99s+=("$pr99")
	echo "$r  $load  $hr  $pr  $rr  $hp  $pp  $pr99"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "median rate-ratio $(median "${ratios[@]}") (target >= 0.95), median p99-ratio $(median "${p99s[@]}") (target <= 1.1)"
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
grep '^gateway-requests' "$work/out" || true # 1: every measured request was a cache hit
