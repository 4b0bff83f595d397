#!/usr/bin/env bash
# Runs cargo with the offline V8 archive from ../shared/v8 when that folder exists
# (and only then, so an online build elsewhere downloads V8 as usual).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -f "$root/../shared/v8/env.sh" ] && [ -z "${RUSTY_V8_ARCHIVE:-}" ]; then
  # shellcheck disable=SC1091
  source "$root/../shared/v8/env.sh"
fi
exec cargo "$@"
