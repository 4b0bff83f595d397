#!/usr/bin/env bash
# Anonymous resident memory of an idle `isolane dev`: serves
# examples/hello.js, waits for its first answer, then 3 s more (the threads'
# spares made), and prints RssAnon in KiB: the process's own memory, without
# the pages of its (debug: 200 MB) binary it happened to touch, which move
# VmRSS by megabytes from run to run. Run it alternately on two builds.
#
#   bench/idle-rss.sh BIN
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=$1
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
state=$(mktemp -d)
ISOLANE_LOG=error "$bin" dev examples/hello.js --port "$port" --state "$state/state" > /dev/null 2>&1 &
pid=$!
trap 'kill "$pid" 2> /dev/null || true; wait "$pid" 2> /dev/null || true; rm -rf "$state"' EXIT
for _ in $(seq 300); do
  curl -sf -m 1 "http://127.0.0.1:$port/" > /dev/null && break
  sleep 0.1
done
sleep 3
awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status"
