#!/usr/bin/env bash
# Leader election across processes: three candidates campaign for one election, an observer
# prints each leader; the leader is killed (SIGKILL) twice and the term advances each time.
# Builds what it needs and starts a throwaway server, as scripts/demo.sh does.
#   scripts/leader-demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== dependencies"
scripts/install-deps.sh
echo "== build"
# A build directory of its own: build/dev keeps whatever tests a developer configured there.
cmake --preset dev -B build/demo-bin -DMONGOLOCK_BUILD_TESTS=OFF >/dev/null
cmake --build build/demo-bin -j"$(nproc)" --target mongolock-leader

work=build/leader-demo
server_dir=$work/mongod
rm -rf "$work/run"
mkdir -p "$work/run"
echo "== server"
uri=$(scripts/mongod start rs1 "$server_dir")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  scripts/mongod stop "$server_dir" 2>/dev/null
}
trap cleanup EXIT
if [ "$(cat "$server_dir/kind")" = jongodb ]; then
  echo "NOTE: running on the jongodb emulator (no real mongod could be obtained here; see README)"
fi

bin=build/demo-bin/examples/mongolock-leader
name="leader-$(date +%s%N)"
common=(--uri "$uri" --name "$name" --dir "$work/run" --expiry-ms 2000)
"$bin" "${common[@]}" --observe > "$work/run/observer" 2>&1 &
pids+=($!)
disown $!  # no "Killed" job reports from the shell
declare -A candidate_of
for i in 1 2 3; do
  "$bin" "${common[@]}" --value "10.0.0.$i:8080" > "$work/run/candidate$i" 2>&1 &
  pids+=($!)
  candidate_of[$!]=$i
  disown $!
done

# The pid of the candidate that leads now (printed LEADER and is still running), or nothing.
current_leader() {
  for p in "${!candidate_of[@]}"; do
    if kill -0 "$p" 2>/dev/null && grep -q LEADER "$work/run/candidate${candidate_of[$p]}"; then echo "$p"; return; fi
  done
}
wait_for_leader() {
  for _ in $(seq 200); do
    l=$(current_leader); [ -n "$l" ] && { echo "$l"; return; }
    sleep 0.05
  done
}

echo "== 3 candidates, expiry 2 s"
for round in 1 2; do
  leader=$(wait_for_leader)
  [ -n "$leader" ] || { echo "VERDICT: FAILED: nobody became leader"; exit 1; }
  sleep 1
  echo "-- killing the leader (pid $leader, candidate ${candidate_of[$leader]}) with SIGKILL"
  kill -9 "$leader"
  start=$(date +%s%N)
  next=$(wait_for_leader)
  [ -n "$next" ] || { echo "VERDICT: FAILED: no new leader after the kill"; exit 1; }
  echo "   candidate ${candidate_of[$next]} leads $(( ($(date +%s%N) - start) / 1000000 )) ms after the kill"
done
sleep 0.5
echo "== what the observer saw"
sed 's/^leader [0-9]* /  /' "$work/run/observer"
terms=$(grep -o 'term=[0-9]*' "$work/run/observer" | cut -d= -f2)
if [ "$(echo "$terms" | wc -l)" -ge 3 ] && [ "$(echo "$terms" | sort -n -c 2>&1 && echo sorted)" = sorted ] \
   && ! grep -q REJECTED "$work/run"/candidate*; then
  echo "VERDICT: three leaders in rising terms; no stale leader's write was accepted"
else
  echo "VERDICT: FAILED (see $work/run)"
  exit 1
fi
