#!/usr/bin/env bash
# Instructions per warm request through the router → node hop, per process
# and per kind of thread, counted by valgrind's callgrind (the distributed
# path's counterpart of bench/instructions.sh, which counts `isolane dev`).
#
#   bench/hop-instructions.sh BIN_DIR [SECONDS]
#
# BIN_DIR holds release `isolane-router`, `isolane-node`, `isolane-operator`,
# `isolane-bench` and `isolane`. It runs `isolane-bench distributed` (etcd,
# kube-apiserver, the operator, one node behind the router, mutual TLS) with
# the router and the node under callgrind, waits until the router answers
# and wrk has loaded it for a while (V8's compiles of the request path are
# done by then), then counts SECONDS (default 40) of whatever load reaches
# the router and divides by the requests both processes' metrics counted
# in that window. Prints instructions per request: router (its HTTP worker
# threads, the rest), node (its gRPC threads, the engine threads).
# Kernel time is not counted. Needs valgrind, curl and what `make bench`
# needs (wrk, the testenv's etcd and kube-apiserver). KEEP_DUMPS=DIR keeps
# the callgrind dumps there, for `callgrind_annotate`. POST_BYTES=N makes
# every request a POST with an N-byte body (default: GETs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin_dir=$(cd "$1" && pwd)
seconds=${2:-40}
work=$(mktemp -d)
trap 'kill "${bench_pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/results" "$work/logs"
ln -s "$bin_dir/isolane-operator" "$work/bin/isolane-operator"
for name in isolane-router isolane-node; do
  cat > "$work/bin/$name" <<EOF
#!/bin/sh
exec valgrind --tool=callgrind --smc-check=all-non-file --separate-threads=yes \\
  --instr-atstart=no --callgrind-out-file="$work/$name.out" "$bin_dir/$name" "\$@"
EOF
  chmod +x "$work/bin/$name"
done

"$bin_dir/isolane-bench" distributed --results "$work/results" --work "$work/logs" \
  --isolane "$bin_dir/isolane" --bin-dir "$work/bin" --rounds 20 --secs 5 \
  ${POST_BYTES:+--post-bytes "$POST_BYTES"} > "$work/bench.log" 2>&1 &
bench_pid=$!

# This run's callgrind processes (by their output files), and their admin
# ports from their command lines.
pid_of() {
  pgrep -f "callgrind-out-file=$work/$1.out" | head -1
}
admin_of() {
  local pid
  pid=$(pid_of "$1")
  [ -n "$pid" ] || return 0
  tr '\0' '\n' < "/proc/$pid/cmdline" | awk '/^--admin-addr$/ { getline; print; exit }'
}
# control ARGS: callgrind_control for this run's two processes only.
control() {
  callgrind_control "$@" "$(pid_of isolane-router)" > /dev/null
  callgrind_control "$@" "$(pid_of isolane-node)" > /dev/null
}
metric() {
  curl -sf "http://$1/metrics" | awk -v m="$2" '$1 ~ "^"m"[{ ]" || $1 == m { s += $2 } END { printf "%d\n", s }'
}
for _ in $(seq 900); do
  [ -n "$(admin_of isolane-router)" ] && [ -n "$(admin_of isolane-node)" ] &&
    [ "$(metric "$(admin_of isolane-router)" isolane_router_requests_total)" -gt 2000 ] && break
  kill -0 "$bench_pid" 2>/dev/null || { cat "$work/bench.log" >&2; exit 1; }
  sleep 1
done
router_admin=$(admin_of isolane-router)
node_admin=$(admin_of isolane-node)
# More warm-up: the first requests under valgrind still compile.
sleep "${WARMUP_SECONDS:-20}"
control -i on
r0=$(metric "$router_admin" isolane_router_requests_total)
n0=$(metric "$node_admin" isolane_node_requests_total)
sleep "$seconds"
r1=$(metric "$router_admin" isolane_router_requests_total)
n1=$(metric "$node_admin" isolane_node_requests_total)
control -i off
control -d
sleep 2
requests=$((r1 - r0))
if [ -n "${KEEP_DUMPS:-}" ]; then
  mkdir -p "$KEEP_DUMPS"
  cp "$work"/isolane-*.out.* "$KEEP_DUMPS"/
fi
echo "requests in the window: router $requests, node $((n1 - n0))" >&2
[ "$requests" -gt 0 ] || { echo "no requests counted" >&2; exit 1; }

# sum NAME PATTERN: instructions of NAME's dumped threads matching PATTERN, then the rest.
sum() {
  local hit=0 rest=0 file n
  for file in "$work/$1.out".*; do
    grep -q '^totals:' "$file" || continue
    n=$(awk '/^totals:/ { print $2; exit }' "$file")
    if grep -q "$2" "$file"; then hit=$((hit + n)); else rest=$((rest + n)); fi
  done
  echo "$((hit / requests)) $((rest / requests))"
}
read -r router_http router_rest < <(sum isolane-router 'isolane_router::proxy')
read -r node_engine node_grpc < <(sum isolane-node 'isolane_engine::thread::serve')
printf '%-28s %12s\n' 'instructions per request' ''
printf '%-28s %12d\n' 'router: worker threads' "$router_http" 'router: other threads' "$router_rest" \
  'node: gRPC threads' "$node_grpc" 'node: engine threads' "$node_engine" \
  'total' "$((router_http + router_rest + node_grpc + node_engine))"
