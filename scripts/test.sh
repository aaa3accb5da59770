#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, starts the servers the tests need
# (through ctest fixtures) and runs every test, twice: a -Werror debug build, then an
# AddressSanitizer + UndefinedBehaviorSanitizer build. Idempotent.
#   MONGOLOCK_SKIP_ASAN=1   skip the sanitizer pass (quick local runs)
#   MONGOLOCK_TEST_URI=...  run the integration tests against your own server instead
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { echo; echo "== $* ($(( $(date +%s) - start ))s)"; }

step "dependencies"
scripts/install-deps.sh
step "test server"
scripts/fetch-mongod.sh >/dev/null
echo "server: $(scripts/mongod kind)"

jobs=$(nproc)
run_preset() {
  local preset=$1; shift
  step "configure + build ($preset)"
  cmake --preset "$preset" -DMONGOLOCK_BUILD_TESTS=ON >/dev/null
  cmake --build --preset "$preset" -j"$jobs"
  step "tests ($preset)"
  ctest --preset "$preset" -j2 "$@"
}

run_preset dev
if [ -z "${MONGOLOCK_SKIP_ASAN:-}" ]; then
  # The consumer check builds and installs a plain Release tree: once (above) is enough.
  run_preset asan -E consumer_find_package
fi
step "all tests passed"
