#!/usr/bin/env bash
# The soak (docs/design.md section 11): a Release build of test/soak, its own single-node replica set
# (or MONGOLOCK_TEST_URI), 4 processes on 3 lock names through the fault proxy, faults cycling every
# 2 s, a holder killed or paused every 5 s. Its last line is the verdict:
#   soak: N acquisitions, 0 overlaps, 0 token regressions, rss first/last A/B KiB (...)
# and it exits non-zero on any overlap, token regression, leak or failed worker.
#   scripts/soak.sh [SECONDS]     default: until 1,000,000 acquisitions (tens of minutes)
# ctest runs 20 s of it (integration.soak) and checks that its verdict can fail (soak_checker).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh >/dev/null
cmake --preset release -DMONGOLOCK_BUILD_TESTS=ON >/dev/null
cmake --build --preset release -j"$(nproc)" --target mongolock-soak
dir=build/release/soak
rm -rf "$dir/run"
mkdir -p "$dir"
if [ -n "${MONGOLOCK_TEST_URI:-}" ]; then
  uri=$MONGOLOCK_TEST_URI
else
  uri=$(scripts/mongod start rs1 "$dir/mongod")
  trap 'scripts/mongod stop "$dir/mongod" 2>/dev/null' EXIT
fi
args=(--uri "$uri" --dir "$dir/run")
[ -n "${1:-}" ] && args+=(--seconds "$1")
build/release/test/mongolock-soak "${args[@]}"
