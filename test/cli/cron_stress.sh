#!/usr/bin/env bash
# Black-box test of scheduled jobs through the CLI (docs/cli.md "Scheduled jobs", docs/design.md
# section 13): HOSTS simulated hosts run the same "cron" job every period with
# `run --once-per D`, each with its own wall clock offset of up to +-1 h (wall_clock_offset.cpp,
# preloaded), each with its own state directory (what that host has seen). A host fires at its
# own phase in each period (the spread of clocks and schedulers), waits up to W for the lock, and
# its job logs its start and its end. Now and then a host's `mongolock` is SIGKILLed (its job dies
# with it).
# Verdict, per period (the period whose firing started the run, as cron would count it):
#   - double runs: two completed runs in one period (0 expected). A second run is excused if the
#     first one was not recorded, as docs/cli.md says: its `mongolock` was SIGKILLed after its job
#     ended, or its lease was lost (74) (counted and shown as "unrecorded");
#   - missed periods: a period with no completed run (0 expected: every host stays alive);
#   - short gaps: two runs begun less than D apart (less the job's start delay), after a recorded
#     run, whenever they fired.
# The first two hold only for hosts that fire on schedule, as docs/cli.md asks of D (above the
# spread of the hosts' start times plus --wait): a firing more than the slack late (a machine too
# loaded to start processes in time) is judged by the gap alone, and the test fails if more than
# one firing in ten was late, saying so: then it could not judge the schedule at all.
# Usage: cron_stress.sh PATH_TO_MONGOLOCK PATH_TO_WALL_CLOCK_SHIM [HOSTS [PERIODS [--no-once-per]]];
# the server URI as in cli_test.sh. --no-once-per: the verdict's own test: the hosts run without
# --once-per, and it must then report double runs (ctest integration.cli_cron_checker expects
# exactly that).
set -u
bin=$1 shim=$2 hosts=${3:-20} periods=${4:-200} check=${5:-}
uri=${MONGOLOCK_TEST_URI:-$(cat "$MONGOLOCK_TEST_SERVER_DIR/uri")}
export MONGOLOCK_URI=$uri MONGOLOCK_DATABASE=mongolock_cron_stress MONGOC_DISABLE_SHM=1
[ -e "$shim" ] || { echo "cron_stress: no wall clock shim at '$shim'"; exit 1; }
# The shim must really move the wall clock (date reads it as the tool does, through clock_gettime):
# its reading an hour back from one taken between two true ones.
before=$(date +%s) shifted=$(LD_PRELOAD=$shim MONGOLOCK_WALL_OFFSET_S=-3600 date +%s) after=$(date +%s)
[ $((shifted + 3600)) -ge "$before" ] && [ $((shifted + 3600)) -le "$after" ] ||
  { echo "cron_stress: the shim read $shifted, not an hour before $before..$after"; exit 1; }
work=$(mktemp -d)
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$work"' EXIT
name="cron-$RANDOM$RANDOM"
log=$work/log
# Period P, the hosts' phases within it (0..spread), the wait W, the once-per D: a second run in
# one period would need a host to have seen this period's run D before, and a host's wait ends W
# after it fired (D > spread + W); the first host to fire saw the last run about P ago (D < P).
# 350 ms of slack on each side for a loaded machine's delays (a process that starts late).
period_ms=1200 spread_ms=100 wait=450ms once_per=900ms ttl=200ms
once=(--once-per "$once_per")
[ "$check" = --no-once-per ] && once=()
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
start=$(( $(now_ms) + 500 ))

# One host: in each period, at its phase, one `mongolock run` in the background (its PID in
# pid.H, so the killer can find it), then its exit status in the log.
host() {
  local h=$1 offset=$2 phase=$3
  for ((k = 0; k < periods; k++)); do
    local at=$(( start + k * period_ms + phase )) left
    left=$(( at - $(now_ms) ))
    [ "$left" -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
    LD_PRELOAD=$shim MONGOLOCK_WALL_OFFSET_S="$offset" \
      "$bin" --ttl "$ttl" --wait "$wait" --quiet run "${once[@]}" --state-dir "$work/state.$h" "$name" -- \
      env -u LD_PRELOAD -u MONGOLOCK_WALL_OFFSET_S sh -c "
        echo start $h \$\$ \$(( \$(date +%s%N) / 1000000 )) $k >> $log
        sleep 0.0\$(( \$\$ % 4 + 2 ))
        echo done $h \$\$ \$(( \$(date +%s%N) / 1000000 )) >> $log" 2>>"$work/stderr.$h" &
    local pid=$! fired
    fired=$(now_ms)
    echo "$pid" > "$work/pid.$h"
    wait "$pid"
    echo "exit $h $pid $? $k $(( fired - at ))" >> "$log"
  done
}

for ((h = 0; h < hosts; h++)); do
  host "$h" $(( RANDOM % 7201 - 3600 )) $(( RANDOM % (spread_ms + 1) )) 2>/dev/null &
done
# The killer: in about one period in four, SIGKILL one host's current `mongolock`, 20..200 ms
# into the period (most often the holder, whose job is running then).
kills=0
for ((k = 0; k < periods; k++)); do
  at=$(( start + k * period_ms + 20 + RANDOM % 180 ))
  left=$(( at - $(now_ms) ))
  [ "$left" -gt 0 ] && sleep "$(printf '%d.%03d' $((left / 1000)) $((left % 1000)))"
  if [ $((RANDOM % 4)) -eq 0 ]; then
    victim=$(cat "$work/pid.$((RANDOM % hosts))" 2>/dev/null)
    [ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null && kills=$((kills + 1))
  fi
done
wait
echo "cron_stress: $hosts hosts, $periods periods of ${period_ms} ms, $kills SIGKILLs"
grep -h . "$work"/stderr.* 2>/dev/null | grep -v "skipped\|not acquired" | sort | uniq -c | sort -rn | head -5

# A completed run: a job that logged "done"; it counts in the period its job started in. Its
# mongolock's exit status tells whether the run can have been recorded (137: SIGKILLed, 74: its
# lease lost). Each exit line carries how late its host fired (ms after its phase in the period).
python3 - "$log" "$period_ms" "$periods" "${once_per%ms}" "$check" <<'PY'
import statistics, sys
log, period, periods, once_per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
checked = sys.argv[5] != "--no-once-per"
slack = 350   # ms, as the host loop's comment allows a loaded machine
runs, pending = [], {}   # pending[host] = the last job of that host, until its mongolock's exit
# A host's `mongolock` may exit 0 (ran), 75 (not acquired within W), 79 (ran within the period),
# 137 (SIGKILLed) or 74 (its lease lost, its job stopped); any other status (69: no server within
# W) means the host did not take part as the verdict assumes, and fails the test.
statuses, odd, late, late_periods = {}, {}, [], set()
for line in open(log):
    f = line.split()
    if f[0] == "exit":
        statuses[f[3]] = statuses.get(f[3], 0) + 1
        if f[3] not in ("0", "74", "75", "79", "137"):
            odd.setdefault(f[1], []).append(f[3])
        late.append(int(f[5]))
        if int(f[5]) > slack:
            late_periods.add(int(f[4]))
    if f[0] == "start":
        pending[f[1]] = {"host": f[1], "began": int(f[3]), "period": int(f[4]), "done": False}
    elif f[0] == "done" and f[1] in pending:
        pending[f[1]]["done"] = True
    elif f[0] == "exit" and f[1] in pending:
        job = pending.pop(f[1])
        job["unrecorded"] = f[3] in ("137", "74")
        job["on_time"] = int(f[5]) <= slack
        if job["done"]:
            runs.append(job)
per = {}
for r in runs:
    per.setdefault(r["period"], []).append(r)
doubles = unrecorded = off_schedule = 0
for k, rs in per.items():
    rs.sort(key=lambda r: r["began"])
    for first, second in zip(rs, rs[1:]):
        if first["unrecorded"]:
            unrecorded += 1
        elif not (first["on_time"] and second["on_time"]):
            off_schedule += 1
        else:
            doubles += 1
            print(f"cron_stress: period {k}: runs by host {first['host']} and host {second['host']}, {second['began'] - first['began']} ms apart")
# The first period and the last one are partial (the hosts start and stop). A period after a late
# firing may rightly have none: that run began late, within D of this period's firings.
missed = [k for k in range(1, periods - 1) if k not in per and not {k - 1, k} & late_periods]
for k in missed[:5]:
    print(f"cron_stress: period {k}: no completed run")
# Runs begin at least D apart, less the time from one run's take to its job's start (a fork and
# two execs, longer on a loaded machine): 400 ms allowed for that. A run right after an unrecorded
# one is not held to it.
ordered = sorted(runs, key=lambda r: r["began"])
pairs = list(zip(ordered, ordered[1:]))
gaps = sorted(b["began"] - a["began"] for a, b in pairs)
short = [b["began"] - a["began"] for a, b in pairs if not a["unrecorded"] and b["began"] - a["began"] < once_per - 400] if checked else []
for g in short[:5]:
    print(f"cron_stress: two runs {g} ms apart, after a recorded run (D = {once_per} ms)")
late_firings = sum(1 for x in late if x > slack)
print(f"cron_stress: {len(runs)} completed runs in {len(per)} periods; {doubles} double runs, "
      f"{len(missed)} missed periods, {unrecorded} unrecorded (SIGKILL after the job ended, or its lease lost); "
      f"shortest gap between runs {gaps[0] if gaps else '-'} ms (D = {once_per} ms)")
print(f"cron_stress: {late_firings} of {len(late)} firings more than {slack} ms late (median {statistics.median(late) if late else '-'} ms, "
      f"most {max(late) if late else '-'} ms); {off_schedule} second runs in a period judged by their gap alone")
print("cron_stress: exit statuses " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=lambda kv: int(kv[0]))))
for host, codes in sorted(odd.items(), key=lambda kv: int(kv[0]))[:5]:
    print(f"cron_stress: host {host} exited {len(codes)} times with an unexpected status ({', '.join(sorted(set(codes)))})")
off = late_firings * 10 > len(late)
if off:
    print("cron_stress: the hosts did not fire on schedule (the machine could not start the processes in time), "
          "so the schedule could not be judged: run it on a quieter machine or with fewer hosts")
sys.exit(1 if doubles or missed or short or odd or off else 0)
PY
