#!/usr/bin/env bash
# Microseconds per warm service-binding call, caller and callee in one
# process, for `isolane dev` and workerd serving the same two Workers:
# `gateway` calls `backend` (a WorkerEntrypoint) N times in a row, by JS RPC
# (`env.BACKEND.add(i, 1)`) and by `env.BACKEND.fetch()` (its body read);
# and `backend` calls back a function `gateway` passed it by reference N
# times in one RPC call (`callback`: each is a stub call into the caller).
#
#   bench/service_calls.sh ISOLANE_BIN WORKERD_BIN [N] [ROUNDS]
#
# Per call: (the time of a request making N+1 calls - that of one making 1)
# / N, from curl's time_total; the median of 7 after 5 warm-ups, for each
# of ROUNDS (default 2) rounds, the two servers in turn. Every answer's sum
# is checked, so a call that throws (isolane counts each call as a
# subrequest, and each callback one of the backend's: both get
# `subrequests: 1000`, N must stay below it)
# stops the script rather than timing an error. isolane runs with one
# engine thread and no tail printer. Not a timed test: run it on a quiet
# machine and read the ratio.
set -euo pipefail
isolane=$1
workerd=$2
n=${3:-900}
rounds=${4:-2}
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/gateway.js" <<'EOF'
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const n = Number(url.searchParams.get('n') || '1');
    let sum = 0;
    if (url.pathname === '/rpc') {
      for (let i = 0; i < n; i++) sum += await env.BACKEND.add(i, 1);
    } else if (url.pathname === '/callback') {
      sum = await env.BACKEND.each(n, (i) => i + 1);
    } else {
      for (let i = 0; i < n; i++) sum += Number(await (await env.BACKEND.fetch('http://backend/')).text());
    }
    return new Response(String(sum));
  },
};
EOF
cat > "$work/backend.js" <<'EOF'
import { WorkerEntrypoint } from 'cloudflare:workers';
export default class Backend extends WorkerEntrypoint {
  async fetch() { return new Response('1'); }
  add(a, b) { return a + b; }
  async each(n, fn) { let sum = 0; for (let i = 0; i < n; i++) sum += await fn(i); return sum; }
}
EOF
indent() { sed 's/^/    /' "$1"; }
mkdir "$work/workers"
{
  printf 'apiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: { name: gateway, namespace: bench }\nspec:\n'
  printf '  routes: [{ host: gateway.test }]\n  compatibilityDate: "2025-06-01"\n'
  printf '  limits: { cpuMs: 30000, subrequests: 1000 }\n'
  printf '  bindings: [{ name: BACKEND, service: { name: backend } }]\n  script: |\n'
  indent "$work/gateway.js"
  printf -- '---\napiVersion: isolane.dev/v1alpha1\nkind: Worker\nmetadata: { name: backend, namespace: bench }\nspec:\n'
  printf '  compatibilityDate: "2025-06-01"\n'
  printf '  limits: { cpuMs: 30000, subrequests: 1000 }\n  script: |\n'
  indent "$work/backend.js"
} > "$work/workers/workers.yaml"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
iso_port=$(free_port)
wd_port=$(free_port)
cat > "$work/config.capnp" <<EOF
using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "gateway", worker = .gateway), (name = "backend", worker = .backend)],
  sockets = [(name = "http", address = "127.0.0.1:$wd_port", http = (), service = "gateway")],
);
const gateway :Workerd.Worker = (
  modules = [(name = "gateway.js", esModule = embed "gateway.js")],
  compatibilityDate = "2025-06-01",
  bindings = [(name = "BACKEND", service = "backend")],
);
const backend :Workerd.Worker = (
  modules = [(name = "backend.js", esModule = embed "backend.js")],
  compatibilityDate = "2025-06-01",
);
EOF

"$isolane" dev --workers "$work/workers" --port "$iso_port" --threads 1 --no-tail \
  > "$work/isolane.log" 2>&1 &
pids+=($!)
"$workerd" serve "$work/config.capnp" > "$work/workerd.log" 2>&1 &
pids+=($!)

# GET $1 on server $2 (url host): prints the time; the body must be $3.
timed() {
  local out
  out=$(curl -s -w ' %{time_total}' -H "Host: gateway.test" "$2$1")
  if [ "${out% *}" != "$3" ]; then
    echo "GET $1 on $2 answered ${out% *}, not $3 (see $work/*.log)" >&2
    exit 1
  fi
  echo "${out##* }"
}
wait_up() {
  for _ in $(seq 100); do
    curl -s -o /dev/null -H "Host: gateway.test" "$1/rpc?n=1" && return 0
    sleep 0.1
  done
  echo "$1 did not answer" >&2
  exit 1
}
per_call() { # server path expected-for-n+1
  local one many values=()
  for _ in $(seq 5); do timed "/$2?n=$((n + 1))" "$1" "$3" > /dev/null; done
  for _ in $(seq 7); do
    one=$(timed "/$2?n=1" "$1" 1)
    many=$(timed "/$2?n=$((n + 1))" "$1" "$3")
    values+=("$(python3 -c "print(round(($many - $one) / $n * 1e6, 1))")")
  done
  printf '%s\n' "${values[@]}" | sort -n | sed -n 4p
}

iso=http://127.0.0.1:$iso_port
wd=http://127.0.0.1:$wd_port
wait_up "$iso"
wait_up "$wd"
rpc_sum=$(((n + 1) * (n + 2) / 2))
echo "µs per call, median of 7 (N = $n); load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-6s %10s %10s %8s\n' round call isolane workerd ratio
for round in $(seq "$rounds"); do
  for call in rpc fetch callback; do
    expected=$((n + 1))
    [ "$call" != fetch ] && expected=$rpc_sum
    a=$(per_call "$iso" "$call" "$expected")
    b=$(per_call "$wd" "$call" "$expected")
    printf '%-6s %-6s %10s %10s %7sx\n' "$round" "$call" "$a" "$b" \
      "$(python3 -c "print(round($b / $a, 2))")"
  done
done
