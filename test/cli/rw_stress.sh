#!/usr/bin/env bash
# Black-box stress of one rw_lock through the CLI, as a user found two holders with it: 2 writers
# (`run --exclusive`) and 4 readers (`run --shared --readers 4`) looping on one name with a 1 s
# ttl, while now and then one `mongolock` process is SIGKILLed or SIGSTOPped for 1.5 s. Each job
# logs when it starts and ends (its TERM trap logs the end, so a job stopped by its supervisor
# closes its interval); the verdict: no writer's interval overlaps any other job's.
# Usage: rw_stress.sh PATH_TO_MONGOLOCK [SECONDS [--no-lock]]; server URI as in cli_test.sh.
# --no-lock: the verdict's own test; writers run their job without the lock, and the run must then
# report overlaps (ctest integration.cli_rw_stress_checker expects exactly that).
# Ends with "N passed, N failed".
set -u
bin=$1 seconds=${2:-20} no_lock=${3:-}
uri=${MONGOLOCK_TEST_URI:-$(cat "$MONGOLOCK_TEST_SERVER_DIR/uri")}
export MONGOLOCK_URI=$uri MONGOLOCK_DATABASE=mongolock_rw_stress
work=$(mktemp -d)
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$work"' EXIT
name="rw-stress-$RANDOM$RANDOM"
log=$work/log
end=$(( $(date +%s) + seconds ))

# One client: runs its side of the lock until the time is up. The job logs "start" and "end"
# lines with the job's own PID (and the time in ns), holding the lock for 20..80 ms.
client() {
  local side=$1 id=$2
  while [ "$(date +%s)" -lt "$end" ]; do
    local run=("$bin" --ttl 1s --wait 5s --quiet run --shared --readers 4 "$name")
    [ "$side" = w ] && run=("$bin" --ttl 1s --wait 5s --quiet run --exclusive --readers 4 "$name")
    [ "$side" = w ] && [ "$no_lock" = --no-lock ] && run=(env)
    "${run[@]}" -- sh -c "
      trap 'echo end $side$id \$\$ \$(date +%s%N) >> $log; exit 143' TERM
      echo start $side$id \$\$ \$(date +%s%N) >> $log
      sleep 0.0\$(( \$\$ % 6 + 2 ))
      echo end $side$id \$\$ \$(date +%s%N) >> $log" 2>>"$work/stderr"
  done
}

for i in 1 2; do client w $i 2>/dev/null & done
for i in 1 2 3 4; do client r $i 2>/dev/null & done
faults=0
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 1.5
  victim=$(pgrep -f -- "--ttl 1s --wait 5s --quiet run" | shuf -n 1)
  [ -z "$victim" ] && continue
  faults=$((faults + 1))
  if [ $((RANDOM % 2)) = 0 ]; then
    kill -KILL "$victim" 2>/dev/null
  else
    kill -STOP "$victim" 2>/dev/null; sleep 1.5; kill -CONT "$victim" 2>/dev/null
  fi
done
wait

python3 - "$log" "$faults" <<'EOF'
import sys
starts, intervals = {}, []
for line in open(sys.argv[1]):
    fields = line.split()
    if len(fields) != 4:  # the TERM that stopped the job also took `date` in its trap: no time
        continue
    what, who, pid, ns = fields
    key = (who, pid)
    if what == "start":
        starts[key] = int(ns)
    elif key in starts:
        intervals.append((starts.pop(key), int(ns), who))
# A job killed outright (SIGKILL to its group) logs no end: it was inside until its start plus at
# most the run's length; it is left out, and counted.
open_jobs = len(starts)
overlaps = 0
intervals.sort()
for i, (s1, e1, w1) in enumerate(intervals):
    for s2, e2, w2 in intervals[i + 1:]:
        if s2 >= e1:
            break
        if w1[0] == "w" or w2[0] == "w":
            overlaps += 1
            print(f"OVERLAP {w1} [{s1}, {e1}] and {w2} [{s2}, {e2}]: {(min(e1, e2) - s2) / 1e6:.1f} ms")
writers = sum(1 for _, _, w in intervals if w[0] == "w")
print(f"rw_stress: {len(intervals)} sections ({writers} writers), {sys.argv[2]} faults, "
      f"{open_jobs} without an end, {overlaps} overlaps")
print(f"{1 if overlaps == 0 and writers > 0 else 0} passed, {0 if overlaps == 0 and writers > 0 else 1} failed")
sys.exit(0 if overlaps == 0 and writers > 0 else 1)
EOF
