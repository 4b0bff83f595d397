#!/usr/bin/env bash
# Instructions per warm request of `isolane dev`, per thread, counted by
# valgrind's callgrind: a noise-free measure of the warm path's own work,
# for changes too small for the wrk ratios of `bench/run.sh` on a shared
# machine (they move ±15 % between rounds; these do not move at all).
#
#   bench/instructions.sh BIN [BASELINE_BIN] [REQUESTS]
#   WORKERD=path/to/workerd bench/instructions.sh BIN ...   (workerd too)
#
# Serves examples/hello.js (through a Worker folder whose CPU limit allows
# valgrind's slowdown) under callgrind, sends WARMUP (default 5000; V8's
# optimizing compiles of the request path are done by then) keep-alive
# requests with curl, then counts REQUESTS (default 2000) more, one at a time.
# COMPAT_DATE gives the Worker that compatibility date (2026-08-04 or later:
# Node.js compatibility on; unset: no date, so it is off).
# WORKERS=<folder> serves that folder's Worker YAML instead (its Worker
# routed at bench.local answers): bench/instructions/service reaches hello
# through a service binding, bench/instructions/dispatch through a dispatch
# namespace binding, bench/instructions/rpc makes one JS RPC call
# (`await env.ADDER.add(1, 2)`) per request, so a call's own cost is the
# difference from hello's.
# workerd serves hello alone either way.
# Prints instructions per request for the HTTP (router) threads, the engine
# threads and in all; with BASELINE_BIN, the same for it and the ratios.
# With WORKERD, workerd serving the same script (its own config, one
# socket, the same compatibility date or 2024-09-23) is counted the same
# way, in all (its threads are not told apart), and the ratio printed.
# KEEP=<folder> keeps callgrind's output files there (one per thread, for
# `callgrind_annotate --inclusive=yes`), which are otherwise deleted.
# Kernel time (the sockets, the wake-ups) is not counted. Needs valgrind
# (apt-get install valgrind) and curl.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

requests=${3:-2000}
warmup=${WARMUP:-5000}
work=$(mktemp -d)
keep() {
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP" && cp "$work"/*.out.* "$KEEP"/ 2> /dev/null || true
  fi
  rm -rf "$work"
}
trap keep EXIT
mkdir "$work/workers"
if [ -n "${WORKERS:-}" ]; then
  cp "$WORKERS"/*.yaml "$work/workers/"
else
  {
    printf 'apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: { name: hello, namespace: dev }\n'
    printf 'spec:\n  routes: [{ host: bench.local }]\n  limits: { cpuMs: 30000, wallMs: 300000 }\n'
    if [ -n "${COMPAT_DATE:-}" ]; then printf '  compatibilityDate: "%s"\n' "$COMPAT_DATE"; fi
    printf '  script: |\n'
    sed 's/^/    /' examples/hello.js
  } > "$work/workers/hello.yaml"
fi

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# measure NAME PID URL: warms the server up, counts REQUESTS requests under
# callgrind, stops it; fails unless each was answered 200.
measure() {
  local name=$1 pid=$2 url=$3 ok
  for _ in $(seq 600); do
    curl -sf -m 2 -H 'Host: bench.local' "$url" > /dev/null && break
    sleep 0.2
  done
  curl -s -H 'Host: bench.local' -o /dev/null "$url?i=[10000-$((10000 + warmup - 1))]"
  callgrind_control -i on "$pid" > /dev/null
  ok=$(curl -s -H 'Host: bench.local' -o /dev/null -w '%{http_code}\n' \
    "$url?i=[10000-$((10000 + requests - 1))]" | grep -c '^200$' || true)
  callgrind_control -i off "$pid" > /dev/null
  callgrind_control -d "$pid" > /dev/null
  kill "$pid"
  wait "$pid" 2> /dev/null || true
  if [ "$ok" != "$requests" ]; then
    echo "instructions: $name answered $ok of $requests requests with 200 (log: $work/$name.log)" >&2
    exit 1
  fi
}

# count_workerd BIN: prints workerd's instructions per request, in all.
count_workerd() {
  local bin=$1 port pid file total=0 n
  port=$(free_port)
  cp examples/hello.js "$work/worker.js"
  cat > "$work/workerd.capnp" <<CAPNP
using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .w)],
  sockets = [(name = "http", address = "127.0.0.1:$port", http = (), service = "main")],
);
const w :Workerd.Worker = (
  modules = [(name = "worker.js", esModule = embed "worker.js")],
  compatibilityDate = "${COMPAT_DATE:-2024-09-23}",
);
CAPNP
  valgrind --tool=callgrind --smc-check=all-non-file --separate-threads=yes \
    --instr-atstart=no --callgrind-out-file="$work/workerd.out" \
    "$bin" serve "$work/workerd.capnp" > "$work/workerd.log" 2>&1 &
  pid=$!
  measure workerd "$pid" "http://127.0.0.1:$port/"
  for file in "$work/workerd.out".1-*; do
    n=$(awk '/^totals:/ { print $2; exit }' "$file")
    total=$((total + n))
  done
  echo "$((total / requests))"
}

# count NAME BIN: prints "http engine total" instructions per request.
count() {
  local name=$1 bin=$2 port pid
  port=$(free_port)
  # ISOLANE_NO_TAIL: the request path itself, not isolane dev printing each
  # invocation on stdout (older binaries ignore it).
  ISOLANE_LOG=warn ISOLANE_NO_TAIL=true valgrind --tool=callgrind --smc-check=all-non-file --separate-threads=yes \
    --instr-atstart=no --callgrind-out-file="$work/$name.out" \
    "$bin" dev --workers "$work/workers" --port "$port" > "$work/$name.log" 2>&1 &
  pid=$!
  measure "$name" "$pid" "http://127.0.0.1:$port/"
  local http=0 engine=0 total=0 file n
  for file in "$work/$name.out".1-*; do
    n=$(awk '/^totals:/ { print $2; exit }' "$file")
    total=$((total + n))
    if grep -q 'isolane_engine::thread::serve' "$file"; then
      engine=$((engine + n))
    elif grep -q 'hyper::proto::h1::dispatch' "$file"; then
      http=$((http + n))
    fi
  done
  echo "$((http / requests)) $((engine / requests)) $((total / requests))"
}

read -r http engine total < <(count new "$1")
printf '%-10s %12s %12s %12s\n' build 'http/req' 'engine/req' 'total/req'
printf '%-10s %12d %12d %12d\n' new "$http" "$engine" "$total"
if [ -n "${2:-}" ]; then
  read -r bhttp bengine btotal < <(count baseline "$2")
  printf '%-10s %12d %12d %12d\n' baseline "$bhttp" "$bengine" "$btotal"
  awk -v a="$http" -v b="$bhttp" -v c="$engine" -v d="$bengine" -v e="$total" -v f="$btotal" \
    'function r(x, y) { return y ? x / y : 0 } BEGIN { printf "%-10s %11.2fx %11.2fx %11.2fx\n", "new/base", r(a, b), r(c, d), r(e, f) }'
fi
if [ -n "${WORKERD:-}" ]; then
  wtotal=$(count_workerd "$WORKERD")
  printf '%-10s %12s %12s %12d\n' workerd - - "$wtotal"
  awk -v a="$total" -v b="$wtotal" 'BEGIN { printf "%-10s %12s %12s %11.2fx\n", "new/workerd", "", "", a / b }'
fi
