#!/usr/bin/env bash
# The simulation (test/sim/, docs/design.md section 11, "Simulation"): real providers of many
# processes on virtual time, random faults, oracles; every seed replays with
# `build/dev/test/mongolock-sim --seed S --verbose`.
#   scripts/sim.sh --corpus        the fixed corpus (seeds 1..2000) and 100 fresh seeds from a
#                                  random start (printed): what CI runs
#   scripts/sim.sh --corpus-part 1|2   its first half (seeds 1..1000), or the rest (seeds
#                                  1001..2000 and the fresh ones), one core each
#   scripts/sim.sh --minutes M     fresh seeds from a random start for M minutes of CPU
#   scripts/sim.sh --seeds N [--from S]   N seeds from S
# MONGOLOCK_SIM: the binary (default build/dev/test/mongolock-sim, built here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
sim=${MONGOLOCK_SIM:-build/dev/test/mongolock-sim}
if [ ! -x "$sim" ]; then
  scripts/install-deps.sh >/dev/null
  cmake --preset dev -DMONGOLOCK_BUILD_TESTS=ON >/dev/null
  cmake --build --preset dev -j"$(nproc)" --target mongolock-sim
fi
# A start far from the corpus, new each run (the seed space is 64 bits).
fresh() { echo $(( ($(date +%s%N) % 1000000000000) + 1000000 )); }
case "${1:-}" in
  --corpus)
    # Its two parts at once, one core each.
    "$0" --corpus-part 1 > "${TMPDIR:-/tmp}/sim-corpus-$$.1" 2>&1 &
    first=$!
    "$0" --corpus-part 2 || rc=$?
    wait "$first" || rc=$?
    cat "${TMPDIR:-/tmp}/sim-corpus-$$.1"; rm -f "${TMPDIR:-/tmp}/sim-corpus-$$.1"
    exit "${rc:-0}"
    ;;
  --corpus-part)
    case "${2:-}" in
      1)
        echo "[sim] corpus: seeds 1..1000"
        "$sim" --seeds 1000 --from 1
        ;;
      2)
        echo "[sim] corpus: seeds 1001..2000"
        "$sim" --seeds 1000 --from 1001
        from=$(fresh)
        echo "[sim] fresh: 100 seeds from $from"
        "$sim" --seeds 100 --from "$from"
        ;;
      *)
        echo "sim.sh: --corpus-part takes 1 or 2" >&2
        exit 64
        ;;
    esac
    ;;
  --minutes)
    from=$(fresh)
    echo "[sim] fresh seeds from $from for ${2:?--minutes needs a count} minutes"
    "$sim" --minutes "$2" --from "$from"
    ;;
  --seeds)
    "$sim" "$@"
    ;;
  *)
    sed -n '2,11p' "$0" >&2
    exit 64
    ;;
esac
