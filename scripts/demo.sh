#!/usr/bin/env bash
# The README's demo command: builds the project, starts a throwaway single-node replica set and
# lets several worker processes contend for one named lock. Each prints when it acquires (with
# its fencing token) and releases; the run ends with a one-line verdict. Idempotent.
#   scripts/demo.sh [WORKERS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${1:-4}
rounds=${2:-3}

echo "== dependencies"
scripts/install-deps.sh
echo "== build"
# A build directory of its own: build/dev keeps whatever tests a developer configured there.
cmake --preset dev -B build/demo-bin -DMONGOLOCK_BUILD_TESTS=OFF >/dev/null
cmake --build build/demo-bin -j"$(nproc)" --target mongolock-worker mongolock-cli  # the CLI: README's "Try it"

work=build/demo
server_dir=$work/mongod
rm -rf "$work/run"
mkdir -p "$work/run"
echo "== server"
uri=$(scripts/mongod start rs1 "$server_dir")
trap 'scripts/mongod stop "$server_dir" 2>/dev/null' EXIT
if [ "$(cat "$server_dir/kind")" = jongodb ]; then
  echo "NOTE: running on the jongodb emulator (no real mongod could be obtained here; see README)"
fi

echo "== $workers workers x $rounds rounds on lock 'demo'"
name="demo-$(date +%s%N)"
pids=()
for i in $(seq "$workers"); do
  { build/demo-bin/examples/mongolock-worker --uri "$uri" --name "$name" --dir "$work/run" \
      --count "$rounds" --hold-ms 150 --expiry-ms 3000; echo $? > "$work/run/rc.$i"; } | tee -a "$work/run/output" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
failed=$(cat "$work/run"/rc.* | grep -cv '^0$' || true)

acquisitions=$(wc -l < "$work/run/journal")
overlaps=$(grep -c OVERLAP "$work/run/output" || true)
increasing=yes
prev=0
while read -r token _; do
  [ "$token" -gt "$prev" ] || increasing=no
  prev=$token
done < "$work/run/journal"
expected=$((workers * rounds))
if [ "$failed" = 0 ] && [ "$acquisitions" = "$expected" ] && [ "$increasing" = yes ] && [ "$overlaps" = 0 ]; then
  echo "VERDICT: mutual exclusion held: $acquisitions acquisitions by $workers processes, 0 overlaps, fencing tokens strictly increasing"
else
  echo "VERDICT: FAILED: $acquisitions/$expected acquisitions, $overlaps overlaps, $failed failed workers, tokens increasing: $increasing"
  exit 1
fi
