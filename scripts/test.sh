#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, starts the servers the tests need
# (through ctest fixtures) and runs the tests in three builds, plus a few seconds of each libFuzzer
# target on its seed corpus (scripts/fuzz.sh, fuzz/make_corpus.py). Idempotent.
#   - -Werror debug without a sanitizer, first: what a sanitizer cannot run (the consumer checks,
#     which install this build; the CLI's fork check with its preload shim; the cron stress with
#     its wall clock shim; the soak's memory-growth check), built with only the targets those
#     need, plus the examples and the benchmark, so that they compile without a sanitizer too, and
#     the tutorials the docs quote (built here only: they run nothing a sanitizer could check), and
#     the simulation's corpus (scripts/sim.sh --corpus: thousands of seeds, too slow under a
#     sanitizer; the sanitizer builds run its suite).
#     Its tests run beside the ASan build, which runs at nice 19 (they mostly wait on timers and
#     processes). With MONGOLOCK_SKIP_ASAN it builds and runs everything instead;
#   - AddressSanitizer + UndefinedBehaviorSanitizer, -Werror: every other test (the asan test
#     preset leaves out the consumer checks; the tests above that need the build without a
#     sanitizer exist only there);
#   - ThreadSanitizer: the in-process suites, where the io_context threads and the driver's worker
#     threads meet.
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
# build_preset PRESET [BUILD TARGET...]   (NICE=N: at that priority)
build_preset() {
  local preset=$1; shift
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  step "configure + build ($preset)"
  cmake --preset "$preset" -DMONGOLOCK_BUILD_TESTS=ON >/dev/null
  nice -n "${NICE:-0}" cmake --build --preset "$preset" -j"$jobs" "${targets[@]}"
}
# test_preset PRESET [CTEST ARGS...]
test_preset() {
  local preset=$1; shift
  step "tests ($preset)"
  ctest --preset "$preset" -j2 "$@"
}
# run_preset PRESET [BUILD TARGET...] [-- CTEST ARGS...]
run_preset() {
  local preset=$1; shift
  local targets=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do targets+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  build_preset "$preset" "${targets[@]}"
  test_preset "$preset" "$@"
}

if [ -z "${MONGOLOCK_SKIP_ASAN:-}" ]; then
  build_preset dev mongolock-cli fork_check supervisor_clock_ahead wall_clock_offset mongolock-soak mongolock-bench mongolock-model \
    mongolock-worker mongolock-leader mongolock-http-backend mongolock-tutorials mongolock-sim
  # The dev tests wait on processes and timers far more than they compute (the cron stress is a
  # schedule of 1.2 s periods), so the ASan build runs beside them at the lowest priority: the
  # tests' processes take the CPU whenever they want it, as if alone; the build gets the rest.
  step "tests (dev), beside the asan build at nice 19 (their output follows the build's)"
  dev_log=build/dev/ci-tests.log
  ctest --preset dev -j2 -R '^(consumer_.*|integration\.cli|integration\.cli_cron.*|integration\.soak|sim_corpus)$' > "$dev_log" 2>&1 &
  dev_tests=$!
  build_failed=0
  NICE=19 build_preset asan || build_failed=1
  step "tests (dev): waiting for them"
  dev_failed=0
  wait "$dev_tests" || dev_failed=1
  cat "$dev_log"
  [ "$dev_failed" = 0 ] || echo "FAILED: tests (dev)"
  [ "$build_failed" = 0 ] || echo "FAILED: build (asan)"
  [ "$dev_failed$build_failed" = 00 ] || exit 1
else
  run_preset dev
fi
step "fuzz smoke (scripts/fuzz.sh: clang, libFuzzer, ASan + UBSan)"
scripts/fuzz.sh "${MONGOLOCK_FUZZ_SECONDS:-5}"
if [ -z "${MONGOLOCK_SKIP_ASAN:-}" ]; then
  test_preset asan
fi
if [ -z "${MONGOLOCK_SKIP_TSAN:-}" ]; then
  # Its test preset selects the suites and the suppressions (test/tsan.supp); the build, only
  # what those suites run (none of them starts the examples or the tool).
  run_preset tsan unit_tests sansio_tests engine_tests integration_tests
fi
step "all tests passed"
