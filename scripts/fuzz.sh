#!/usr/bin/env bash
# Fuzzing: builds the libFuzzer targets (fuzz/) with Debian's clang 14 under
# ASan + UBSan and runs each for SECONDS on its seed corpus (written by fuzz/make_corpus.py into
# build/fuzz/seeds/TARGET).
#   scripts/fuzz.sh [SECONDS] [TARGET...]    default: 60 s each, every target
# Targets: redact (URI redaction), cli_args (durations, argv), lock_name (names, namespaces),
# lock_doc (lock documents as the server returns them, through parse, status and an acquire),
# fence_doc (a fenced write's filter and change, through build_fence_command), plain_json (the
# fenced write's own JSON reader against libbson's, byte for byte).
# New inputs go to build/fuzz/corpus/TARGET; a finding is saved as
# build/fuzz/findings/TARGET/crash-* (rerun: build/fuzz/fuzz/TARGET_fuzz FILE) and fails the run.
# scripts/test.sh runs a smoke of a few seconds per target.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(redact cli_args lock_name lock_doc fence_doc plain_json)
scripts/install-deps.sh >/dev/null
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j"$(nproc)" --target "${targets[@]/%/_fuzz}"
python3 fuzz/make_corpus.py build/fuzz/seeds
status=0
for t in "${targets[@]}"; do
  work=build/fuzz/corpus/$t findings=build/fuzz/findings/$t
  mkdir -p "$work" "$findings"
  echo "[fuzz] $t: ${seconds}s"
  if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
       "build/fuzz/fuzz/${t}_fuzz" -max_total_time="$seconds" -print_final_stats=1 \
       -artifact_prefix="$findings/" "$work" "build/fuzz/seeds/$t" > "build/fuzz/$t.log" 2>&1; then
    echo "[fuzz] $t: FINDING (build/fuzz/$t.log):"
    grep -E "fuzz check failed|runtime error|ERROR: |Test unit written" "build/fuzz/$t.log" | head -n 5 || true
    status=1
  else
    echo "[fuzz] $t: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "build/fuzz/$t.log" | grep -o '[0-9]*$' || true) runs, no finding"
  fi
done
exit $status
