#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, starts the servers the tests need
# (through ctest fixtures) and runs the tests in three builds: -Werror debug (everything),
# AddressSanitizer + UndefinedBehaviorSanitizer (everything), ThreadSanitizer (the in-process
# suites, where the io_context threads and the driver's worker threads meet), plus a few seconds
# of each libFuzzer target on its seed corpus (scripts/fuzz.sh, fuzz/make_corpus.py). Idempotent.
#   MONGOLOCK_SKIP_ASAN=1 / MONGOLOCK_SKIP_TSAN=1   skip a sanitizer pass (quick local runs)
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
step "fuzz smoke (scripts/fuzz.sh: clang, libFuzzer, ASan + UBSan)"
scripts/fuzz.sh "${MONGOLOCK_FUZZ_SECONDS:-5}"
if [ -z "${MONGOLOCK_SKIP_ASAN:-}" ]; then
  # The consumer checks build plain Release trees: once (above) is enough.
  run_preset asan -E consumer_
fi
if [ -z "${MONGOLOCK_SKIP_TSAN:-}" ]; then
  run_preset tsan  # its test preset selects the suites and the suppressions (test/tsan.supp)
fi
step "all tests passed"
