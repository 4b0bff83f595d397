#!/usr/bin/env bash
# Web Platform Tests on Isolane and on workerd, side by side (issue 13):
# regenerates bench/wpt/results.md. `make wpt` runs this.
#
#   bench/wpt/run.sh <wpt checkout>       (or WPT_DIR=<checkout> bench/wpt/run.sh)
#
# The checkout needs resources/, common/, interfaces/ and the tested folders
# (url encoding fetch/api streams compression FileAPI dom); nothing of WPT is
# stored in this repository. Every `.any.js` file meant for a worker runs once
# per META variant, in a fresh `isolane dev` and a fresh `workerd serve`,
# under a per-file deadline; requests go to 127.0.0.1 only.
#
# Environment: ISOLANE_BIN (default: build target/debug/isolane), WORKERD_BIN
# (default: the npm workerd in compat/node_modules), WPT_COMMIT (the WPT
# commit to print when the checkout is not a git work tree), WPT_RESULTS (the
# folder for raw results and logs; default a new temp dir), WPT_FILTER (a
# regex on file ids, for a partial run: the page then covers only those),
# WPT_JOBS (files at once, default 2), WPT_OUT (default bench/wpt/results.md),
# WPT_KEEP=1 (keep every generated Worker and log, not only those of files
# that failed or errored), WPT_BASELINE (an earlier run's WPT_RESULTS: the
# page then says what changed since).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
wpt="${1:-${WPT_DIR:-}}"
case "$wpt" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") echo "bench/wpt/run.sh: give a WPT checkout (argument or WPT_DIR)" >&2; exit 64 ;;
esac
[ -f "$wpt/resources/testharness.js" ] || { echo "bench/wpt/run.sh: $wpt is not a WPT checkout" >&2; exit 64; }

isolane="${ISOLANE_BIN:-}"
if [ -z "$isolane" ]; then
  (cd "$root" && hack/cargo.sh build -q -p isolane)
  isolane="${CARGO_TARGET_DIR:-$root/target}/debug/isolane"
fi
arch=64; [ "$(uname -m)" = aarch64 ] && arch=arm64
workerd="${WORKERD_BIN:-$root/compat/node_modules/@cloudflare/workerd-linux-$arch/bin/workerd}"
[ -x "$workerd" ] || { echo "bench/wpt/run.sh: no workerd at $workerd (run hack/install-deps.sh)" >&2; exit 64; }

results="${WPT_RESULTS:-$(mktemp -d -t isolane-wpt-XXXXXX)}"
echo "wpt: raw results and logs in $results" >&2
args=(--wpt "$wpt" --results "$results" --isolane "$isolane" --workerd "$workerd"
  --jobs "${WPT_JOBS:-2}" --out "${WPT_OUT:-$root/bench/wpt/results.md}")
[ -n "${WPT_COMMIT:-}" ] && args+=(--wpt-commit "$WPT_COMMIT")
[ -n "${WPT_FILTER:-}" ] && args+=(--filter "$WPT_FILTER")
[ -n "${WPT_BASELINE:-}" ] && args+=(--baseline "$WPT_BASELINE")
# Each file has its own deadline inside; this bounds the whole run.
exec timeout 3600 node "$root/bench/wpt/run.mjs" "${args[@]}"
