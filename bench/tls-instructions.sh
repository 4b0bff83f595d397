#!/usr/bin/env bash
# What TLS costs the router per keep-alive request, in instructions
# (callgrind) and in system calls (strace): the noise-free counterpart of
# `isolane-bench https` (docs/benchmarks.md section 14), whose req/s move
# ±15 % between rounds on a shared machine.
#
#   bench/tls-instructions.sh BIN_DIR [REQUESTS]
#   TOOL=strace bench/tls-instructions.sh BIN_DIR [REQUESTS]
#
# BIN_DIR holds release `isolane-router`, `isolane-node`,
# `isolane-operator` and `isolane-bench`. It runs `isolane-bench https`
# (etcd, kube-apiserver, the operator, one node, the router with its HTTPS
# listener and a labelled Secret for `localhost`) with the router under
# callgrind (or, with TOOL=strace, under nothing, strace attached while
# counting), and a stand-in `wrk` that holds the bench once the Worker is
# served over both. Then, plain HTTP and HTTPS in turn, one curl sends
# WARMUP (default 2000) requests on one keep-alive HTTP/1.1 connection and
# REQUESTS (default 2000) more while counting, each answer checked to be
# 200. Prints instructions (or system calls) per request, the router's
# threads together. Kernel time is not counted. KEEP=DIR keeps the
# callgrind dumps (`callgrind_annotate DIR/router.out.1`: plain,
# `.2`: HTTPS) or strace's tables there. Needs valgrind or strace, and
# curl.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin_dir=$(cd "$1" && pwd)
requests=${2:-2000}
warmup=${WARMUP:-2000}
tool=${TOOL:-callgrind}
work=$(mktemp -d)
finish() {
  kill "${bench_pid:-}" 2> /dev/null || true
  wait "${bench_pid:-}" 2> /dev/null || true
  # The stand-in wrk outlives the bench that started it.
  if [ -s "$work/wrk.pid" ]; then kill "$(cat "$work/wrk.pid")" 2> /dev/null || true; fi
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP" && cp "$work"/router.out.* "$work"/*.strace "$KEEP"/ 2> /dev/null || true
  fi
  rm -rf "$work"
}
trap finish EXIT
mkdir -p "$work/bin" "$work/path" "$work/results" "$work/logs"
ln -s "$bin_dir/isolane-operator" "$work/bin/isolane-operator"
ln -s "$bin_dir/isolane-node" "$work/bin/isolane-node"
if [ "$tool" = callgrind ]; then
  cat > "$work/bin/isolane-router" << EOF
#!/bin/sh
exec valgrind --tool=callgrind --instr-atstart=no \\
  --callgrind-out-file="$work/router.out" "$bin_dir/isolane-router" "\$@"
EOF
else
  ln -s "$bin_dir/isolane-router" "$work/bin/isolane-router"
fi
chmod +x "$work/bin/isolane-router"
# The bench calls wrk once both URLs answer: hold it there.
cat > "$work/path/wrk" << EOF
#!/bin/sh
echo \$\$ > "$work/wrk.pid"
echo "\$@" > "$work/wrk.args"
exec sleep 100000
EOF
chmod +x "$work/path/wrk"

PATH="$work/path:$PATH" "$bin_dir/isolane-bench" https --results "$work/results" \
  --work "$work/logs" --bin-dir "$work/bin" --rounds 1 --secs 1 > "$work/bench.log" 2>&1 &
bench_pid=$!
for _ in $(seq 1200); do
  [ -s "$work/wrk.args" ] && break
  kill -0 "$bench_pid" 2> /dev/null || { cat "$work/bench.log" >&2; exit 1; }
  sleep 0.5
done
[ -s "$work/wrk.args" ] || { echo "tls-instructions: the bench never got to wrk" >&2; exit 1; }

if [ "$tool" = callgrind ]; then
  pid=$(pgrep -f "callgrind-out-file=$work/router.out" | head -1)
else
  pid=$(pgrep -f "$work/bin/isolane-router" | head -1)
fi
[ -n "$pid" ] || { echo "tls-instructions: no router process" >&2; exit 1; }
arg_after() {
  tr '\0' '\n' < "/proc/$pid/cmdline" | awk -v flag="$1" '$0 == flag { getline; print; exit }'
}
plain="http://$(arg_after --listen-addr)/"
https="https://localhost:$(arg_after --tls-listen-addr | sed 's/.*://')/"

# count NAME URL N: N requests on one keep-alive connection; fails unless
# each was answered 200.
count() {
  local codes ok
  codes=$(curl -sk --http1.1 -H 'Host: localhost' -o /dev/null -w '%{http_code}\n' "$2?i=[1-$3]" || true)
  ok=$(grep -c '^200$' <<< "$codes" || true)
  if [ "$ok" != "$3" ]; then
    echo "tls-instructions: $1 answered $ok of $3 requests with 200:" \
      "$(sort <<< "$codes" | uniq -c | tr '\n' ' ')" >&2
    exit 1
  fi
}

# measure NAME URL DUMP: warms up, then counts REQUESTS under the tool.
measure() {
  local name=$1 url=$2 dump=$3
  count "$name" "$url" "$warmup"
  if [ "$tool" = callgrind ]; then
    callgrind_control -z "$pid" > /dev/null
    callgrind_control -i on "$pid" > /dev/null
    count "$name" "$url" "$requests"
    callgrind_control -i off "$pid" > /dev/null
    callgrind_control -d "$pid" > /dev/null
    local total
    total=$(awk '/^totals:/ { t = $2 } END { print t }' "$work/router.out.$dump")
    echo "$name: $((total / requests)) instructions per request ($total for $requests)"
  else
    strace -q -c -f -p "$pid" -o "$work/$name.strace" &
    local strace_pid=$!
    sleep 1
    count "$name" "$url" "$requests"
    kill -INT "$strace_pid"
    wait "$strace_pid" 2> /dev/null || true
    local calls
    calls=$(awk '$NF == "total" { print $(NF-2) }' "$work/$name.strace")
    echo "$name: $(awk -v c="$calls" -v n="$requests" 'BEGIN { printf "%.2f", c / n }') system calls per request ($calls for $requests)"
    grep -E '^ *[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+' "$work/$name.strace" | awk -v n="$requests" \
      '$4 >= n / 10 { printf "  %s %.2f\n", $NF, $4 / n }'
  fi
}

measure http "$plain" 1
measure https "$https" 2
