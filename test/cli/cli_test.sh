#!/usr/bin/env bash
# Black-box tests of the `mongolock` tool: the built binary, run as separate processes against
# the test server. Usage: cli_test.sh PATH_TO_MONGOLOCK PATH_TO_FORK_CHECK_SO
# PATH_TO_SUPERVISOR_CLOCK_AHEAD_SO (server URI from the ctest fixture or MONGOLOCK_TEST_URI).
# Ends with "N passed, N failed".
set -u
bin=$1 fork_check=${2:-} supervisor_ahead=${3:-}  # no shims under a sanitizer (see test/CMakeLists.txt)
uri=${MONGOLOCK_TEST_URI:-$(cat "$MONGOLOCK_TEST_SERVER_DIR/uri")}
export MONGOLOCK_URI=$uri MONGOLOCK_DATABASE=mongolock_cli_test
work=$(mktemp -d)
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$work"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
bad() { failed=$((failed + 1)); echo "FAIL - $1"; }
check() { if eval "$2"; then ok "$1"; else bad "$1 [$2]"; fi; }
name() { echo "cli-$1-$RANDOM$RANDOM"; }
# Waits (10 s at most) for a file a command makes once it runs under the lock: a fixed sleep
# was too short for a loaded CI machine (the signal then came before the command had started).
wait_for_file() { for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.05; done; return 1; }

# 1. Contention: 6 processes, each command runs exactly once, never two at a time, tokens increase.
n=$(name contention); d=$work/c; mkdir -p "$d"
for i in 1 2 3 4 5 6; do
  "$bin" run "$n" -- sh -c "mkdir '$d/in' 2>/dev/null || echo OVERLAP >> '$d/overlaps'; \
    echo \$MONGOLOCK_FENCING_TOKEN >> '$d/tokens'; sleep 0.1; rmdir '$d/in'" &
done
wait
check "contention: six commands ran" '[ "$(wc -l < "$d/tokens")" = 6 ]'
check "contention: zero overlaps" '[ ! -e "$d/overlaps" ]'
check "contention: tokens strictly increase" '[ "$(sort -n "$d/tokens" | uniq | tr "\n" " ")" = "$(tr "\n" " " < "$d/tokens")" ]'

# 2. --wait 0 on a held lock: exit 75, command not run.
n=$(name busy)
# The holder outlives the checks however slow the build (ASan); it is stopped at the end.
"$bin" --label nightly-report run "$n" sh -c "touch $work/s2; exec sleep 20" & holder=$!
wait_for_file "$work/s2"
"$bin" --wait 0 run "$n" touch "$work/ran" 2>"$work/busy"; rc=$?
check "--wait 0 on held lock exits 75" '[ $rc = 75 ]'
check "a busy lock says who holds it, in a sentence: owner, host, pid, label ($(cat "$work/busy"))" \
  'grep -q "^mongolock: lock .$n. not acquired: it is held by [0-9a-f]\{32\} (host $(hostname), pid [0-9]*, label nightly-report), renewed [0-9]* ms ago$" "$work/busy"'
check "--wait 0 on held lock does not run the command" '[ ! -e "$work/ran" ]'
check "--wait 0 on a live holder announces no confirmation" '! grep -q "confirming" "$work/busy"'
MONGOLOCK_WAIT=0 "$bin" run "$n" true 2>/dev/null; rc=$?
check "MONGOLOCK_WAIT=0 from the environment works too" '[ $rc = 75 ]'
"$bin" --wait 300ms run "$n" true 2>"$work/timed-out"; rc=$?
check "--wait 300ms times out with 75" '[ $rc = 75 ]'
check "a timeout while waiting blames no server call ($(cat "$work/timed-out"))" \
  'grep -q "not acquired before the timeout" "$work/timed-out" && ! grep -q "in flight" "$work/timed-out"'
"$bin" -E 3 -w 0 -q run "$n" true; rc=$?
check "-E 3 -w 0 -q on a held lock exits 3 (flock habits)" '[ $rc = 3 ]'
"$bin" --conflict-exit-code=0 --wait=0.3s --quiet run "$n" touch "$work/ran"; rc=$?
check "--conflict-exit-code=0 --wait=0.3s: 0, command not run" '[ $rc = 0 ] && [ ! -e "$work/ran" ]'
kill -TERM $holder; wait $holder

# 3. A killed `mongolock run` is taken over after --ttl.
n=$(name killed)
"$bin" --ttl 1s run "$n" sh -c "touch $work/s3; exec sleep 30" & victim=$!
wait_for_file "$work/s3"
kill -KILL $victim; pkill -KILL -f "sleep 30" 2>/dev/null
t0=$(date +%s%N)
"$bin" --wait 10s run "$n" true; rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
# Under 8 s: taken over once the holder's lease was waited out, well before --wait; a sanitizer
# build beside other suites on two cores took 5.5-6.1 s.
check "killed holder taken over (rc=$rc after ${took} ms)" '[ $rc = 0 ] && [ $took -ge 900 ] && [ $took -lt 8000 ]'

# 3b. Cron with --wait 0 after a crashed holder: a single try confirms the silent holder is gone
#     (one --ttl of observation) and runs the job, instead of reporting busy forever.
n=$(name crashed)
"$bin" --ttl 1s run "$n" sh -c "touch $work/s3b; exec sleep 30" & victim=$!
wait_for_file "$work/s3b"
kill -KILL $victim; pkill -KILL -f "sleep 30" 2>/dev/null
sleep 3.3
"$bin" --wait 0 run "$n" true 2>"$work/s3b.err"; rc=$?
check "--wait 0 takes over a holder silent for 3 x --ttl" '[ $rc = 0 ]'
# Not silently: the confirmation (its lease of 1 s plus our margin, 30 s / 10) is announced with
# the time it may take and who held the lock.
check "--wait 0 says it is confirming a silent holder, and for how long ($(head -c 300 "$work/s3b.err"))" \
  'grep -q "confirming that this silent holder is gone, which takes up to 4.0 s (its lease of 1000 ms plus a margin of 3000 ms)" "$work/s3b.err" && grep -q "held by" "$work/s3b.err"'

# 3c. --wait 0 confirms a silent holder for every kind, as for a plain lock (docs/cli.md: `--wait 0`):
#     a semaphore's permit (-n), a rw_lock's reader (--shared) and its writer (--exclusive, which
#     confirms NAME#w and then each permit in turn). Holders with a 1 s ttl are killed and silent for
#     over 3 x that ttl; the tries' own --ttl 1s makes each confirmation 1 s + 100 ms of margin.
np=$(name crashed-permits) nr=$(name crashed-reader) nw=$(name crashed-writer)
"$bin" --ttl 1s run -n 2 "$np" sh -c "touch $work/s3c.p1; exec sleep 33" & v1=$!
"$bin" --ttl 1s run -n 2 "$np" sh -c "touch $work/s3c.p2; exec sleep 33" & v2=$!
"$bin" --ttl 1s run --shared --readers 1 "$nr" sh -c "touch $work/s3c.r; exec sleep 33" & v3=$!
"$bin" --ttl 1s run --exclusive --readers 1 "$nw" sh -c "touch $work/s3c.w; exec sleep 33" & v4=$!
for f in p1 p2 r w; do wait_for_file "$work/s3c.$f"; done
kill -KILL $v1 $v2 $v3 $v4; wait $v1 $v2 $v3 $v4 2>/dev/null; pkill -KILL -f "sleep 33" 2>/dev/null
sleep 3.5
"$bin" --wait 0 --ttl 1s run -n 2 "$np" true 2>"$work/s3c.p.err"; rc_p=$?
"$bin" --wait 0 --ttl 1s run --shared --readers 1 "$nr" true 2>"$work/s3c.r.err"; rc_r=$?
"$bin" --wait 0 --ttl 1s run --exclusive --readers 1 "$nw" true 2>"$work/s3c.w.err"; rc_w=$?
check "--wait 0 takes over silent holders of -n 2 ($rc_p), --shared ($rc_r), --exclusive ($rc_w): $(head -c 300 "$work/s3c.p.err")" \
  '[ $rc_p = 0 ] && [ $rc_r = 0 ] && [ $rc_w = 0 ]'
check "--wait 0 -n says it is confirming a silent permit holder ($(head -c 300 "$work/s3c.p.err"))" \
  'grep -q "permit .$np#[12]. is held by .*; --wait 0 is confirming that this silent holder is gone, which takes up to 1.1 s per silent permit" "$work/s3c.p.err"'

# 4. Lease lost (operator override): the command gets SIGTERM, run exits 74.
n=$(name lost)
"$bin" --ttl 1s run "$n" sh -c "trap 'echo TERM > $work/term; exit 0' TERM; touch $work/s4; sleep 30 & wait" 2>"$work/lost.err" & runner=$!
wait_for_file "$work/s4"
"$bin" release --force "$n" 2>"$work/force.err"; rc_force=$?
wait $runner; rc=$?
check "release --force exits 0 and says so" '[ $rc_force = 0 ] && grep -q "operator override" "$work/force.err"'
check "lost lease: command received SIGTERM" '[ -e "$work/term" ]'
check "lost lease: run exits 74" '[ $rc = 74 ]'
"$bin" status "$n" >"$work/broken.json"
check "status shows the placeholder owner" 'grep -q "\"owner\":\"(force-released)\"" "$work/broken.json"'
"$bin" release --force "$n" 2>/dev/null; rc=$?
check "release --force on an already broken lock exits 1" '[ $rc = 1 ]'
"$bin" release --force --now "$n" 2>/dev/null; rc=$?
t0=$(date +%s%N)
"$bin" --wait 0 run "$n" true; rc_after=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
check "release --force --now frees at once (rc=$rc, then $rc_after after $took ms)" '[ $rc = 0 ] && [ $rc_after = 0 ] && [ $took -lt 900 ]'
"$bin" release --force "$n" 2>/dev/null; rc=$?
check "release --force on a free lock exits 1" '[ $rc = 1 ]'
pkill -KILL -f "sleep 30" 2>/dev/null

# 5. A command that ignores SIGTERM is killed after --kill-after.
n=$(name stubborn)
"$bin" --ttl 1s --kill-after 300ms run "$n" sh -c "trap '' TERM; touch $work/s5; while :; do sleep 0.1; done" 2>/dev/null & runner=$!
wait_for_file "$work/s5"
"$bin" release --force "$n" 2>/dev/null
wait $runner; rc=$?
check "stubborn command SIGKILLed after --kill-after, run exits 74" '[ $rc = 74 ]'
# The placeholder the default release --force left: the next holder waits out the old lease (1s +
# margin).
t0=$(date +%s%N)
"$bin" --wait 0 run "$n" true; rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
check "after release --force the next holder waits out the old lease (rc=$rc after $took ms)" '[ $rc = 0 ] && [ $took -ge 1000 ]'

# 6. Exit status is the command's; 128+N when killed by signal N.
n=$(name status)
"$bin" run "$n" sh -c 'exit 7'; rc=$?
check "exit status forwarded (7)" '[ $rc = 7 ]'
"$bin" run "$n" sh -c 'kill -TERM $$'; rc=$?
check "killed by SIGTERM gives 143" '[ $rc = 143 ]'
"$bin" run "$n" /nonexistent/command 2>/dev/null; rc=$?
check "missing command gives 127" '[ $rc = 127 ]'

# 7. SIGINT to mongolock is forwarded to the command; then release; exit with its status.
n=$(name forward)
"$bin" run "$n" sh -c "trap 'echo INT > $work/int; exit 5' INT; touch $work/s7; sleep 30 & wait" & runner=$!
wait_for_file "$work/s7"
kill -INT $runner
wait $runner; rc=$?
check "SIGINT forwarded to the command" '[ -e "$work/int" ]'
check "exit status after forwarded signal is the command's (5)" '[ $rc = 5 ]'
check "lock released after forwarded signal" '"$bin" status "$n" | grep -q "\"held\":false"'
pkill -KILL -f "sleep 30" 2>/dev/null
# Interrupted while still waiting for the lock: nothing ran, exit 128 + 2.
"$bin" run "$n" sh -c "touch $work/s7b; exec sleep 30" & holder=$!
wait_for_file "$work/s7b"
"$bin" --wait 20s run "$n" touch "$work/ran7" & waiting=$!
sleep 2  # it is waiting by then, also as a sanitizer build on a loaded machine (0.5 s was not)
kill -INT $waiting
wait $waiting; rc=$?
check "SIGINT while waiting: exit 130, command not run (rc=$rc)" '[ $rc = 130 ] && [ ! -e "$work/ran7" ]'
kill -TERM $holder; wait $holder

# 8. Successive commands see strictly increasing fencing tokens.
n=$(name tokens)
for i in 1 2 3; do "$bin" run "$n" sh -c 'echo $MONGOLOCK_FENCING_TOKEN' >> "$work/seq"; done
check "successive tokens increase" '[ "$(sort -n "$work/seq" | uniq | tr "\n" " ")" = "$(tr "\n" " " < "$work/seq")" ] && [ "$(wc -l < "$work/seq")" = 3 ]'

# 9. status and list print JSON, with who holds the lock (host, pid, --label).
n=$(name json)
"$bin" --label nightly-report run "$n" sh -c "touch $work/s9; exec sleep 2" & holder=$!
wait_for_file "$work/s9"
out=$("$bin" status "$n"); rc=$?
check "status of a held lock exits 0 (usable in a shell test)" '[ $rc = 0 ]'
check "status shows holder as JSON" 'echo "$out" | grep -q "\"name\":\"$n\",\"exists\":true,\"held\":true,\"owner\":\"[0-9a-f]\{32\}\""'
check "status names the holder's host, pid and label ($out)" \
  'echo "$out" | grep -q "\"host\":\"$(hostname)\",\"pid\":$holder,\"label\":\"nightly-report\",\"renewed_at\":\"20"'
check "list has one line per lock" '[ "$("$bin" list | grep -c "\"name\":")" -ge 5 ]'
"$bin" list --held >"$work/held.json"; rc=$?
check "list --held lists only held locks, this one among them (rc=$rc)" \
  '[ $rc = 0 ] && grep -q "\"name\":\"$n\"" "$work/held.json" && ! grep -q "\"held\":false" "$work/held.json" && [ "$("$bin" list | grep -c "\"held\":false")" -ge 1 ]'
check "--help shows list --held" '"$bin" --help | grep -q "list \[--held\]"'
wait $holder
out=$("$bin" status "$n"); rc=$?
check "status of a free lock exits 1 (if mongolock status NAME >/dev/null; then ... held)" '[ $rc = 1 ]'
check "a released lock: exists, not held, no holder fields" \
  'echo "$out" | grep -q "\"exists\":true,\"held\":false,\"owner\":null" && echo "$out" | grep -q "\"host\":null,\"pid\":null,\"label\":null"'
out=$("$bin" status "$(name never-used)"); rc=$?
check "status of a name never used exits 1" '[ $rc = 1 ]'
check "a name never used says so: exists false" 'echo "$out" | grep -q "\"exists\":false,\"held\":false"'

# 10. Usage errors exit 64; unreachable server exits 69; passwords never printed.
for args in "--ttl 5x run a true" "--wait -1s run a true" "--ttl 1.5.2 run a true" "--bogus list" "run" "run a" \
            "frobnicate" "release a" "status" "--uri not-a-uri list"; do
  "$bin" $args >/dev/null 2>&1; rc=$?
  check "usage error exits 64: $args" '[ $rc = 64 ]'
done
"$bin" --collection 'a$b' status x 2>"$work/badcoll"; rc=$?
check "bad collection: 64, the reason, no internal code ($(cat "$work/badcoll"))" \
  '[ $rc = 64 ] && grep -q "collection name contains" "$work/badcoll" && ! grep -q "\[mongolock:" "$work/badcoll"'
n=$(name bare)
"$bin" -w 0.5 --ttl 2 run "$n" true; rc=$?
check "a bare number is seconds, as flock -w: -w 0.5 --ttl 2 run (rc=$rc)" '[ $rc = 0 ]'
"$bin" --ttl 9999999h run a true 2>"$work/range"; rc=$?
check "--ttl out of range: 64, names the flag and the limit" '[ $rc = 64 ] && grep -q -- "--ttl must be between 100ms and 24h" "$work/range"'
"$bin" --ttl 2s --margin 1s run a true 2>"$work/range"; rc=$?
check "--margin not below half of --ttl: 64, names both" '[ $rc = 64 ] && grep -q -- "--margin 1s must be below half of --ttl 2s" "$work/range"'
n=$(name margin)
"$bin" --ttl 2s --margin 500ms run "$n" true; rc=$?
check "--margin within the rule runs the command" '[ $rc = 0 ]'
MONGOLOCK_WAIT=9999999h "$bin" run a true 2>"$work/range"; rc=$?
check "MONGOLOCK_WAIT out of range: 64, names it and the limit" '[ $rc = 64 ] && grep -q "MONGOLOCK_WAIT must be between 0 and 8784h" "$work/range"'
"$bin" --uri 'mongodb://alice:s3cr3t@127.0.0.1:1/?serverSelectionTimeoutMS=300' run x true 2>"$work/unreach-pw"; rc=$?
check "unreachable server exits 69" '[ $rc = 69 ]'
check "unreachable server: the message gives the driver's reason ($(head -c 160 "$work/unreach-pw"))" \
  'grep -q "not acquired: MongoDB server unavailable (..*)" "$work/unreach-pw"'
# --wait bounds the whole run, even when the URI lets server selection take 12 s, and a server
# that never answered is "unavailable" (69), not "busy" (75).
t0=$(date +%s%N)
"$bin" --uri 'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=12000' --wait 1s run x true 2>"$work/unreach"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "--wait 1s against no server: 69 within 4 s, whatever the URI's timeout (rc=$rc, ${ms} ms)" '[ $rc = 69 ] && [ $ms -lt 4000 ]'
# --wait 0 is one look, not a bound: against no server it takes the URI's server selection
# timeout (docs/cli.md: 5 s by default), and a shorter serverSelectionTimeoutMS shortens it.
t0=$(date +%s%N)
"$bin" --uri 'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500' --wait 0 run x true 2>"$work/unreach0"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "--wait 0 against no server: 69 after the URI's 500 ms selection timeout (rc=$rc, ${ms} ms)" \
  '[ $rc = 69 ] && [ $ms -ge 450 ] && [ $ms -lt 3000 ]'
for sub in "status x" "list" "release --force x"; do
  "$bin" --uri 'mongodb://alice:s3cr3t@127.0.0.1:1/?serverSelectionTimeoutMS=300' $sub 2>"$work/unreach-sub"; rc=$?
  check "$sub against no server: 69 with the driver's reason, no password ($(head -c 120 "$work/unreach-sub"))" \
    '[ $rc = 69 ] && grep -q "^mongolock: MongoDB server unavailable (..*)" "$work/unreach-sub" && ! grep -q s3cr3t "$work/unreach-sub"'
done
MONGOLOCK_TTL=bogus "$bin" --help >/dev/null 2>&1; rc=$?
check "a bad MONGOLOCK_* variable does not block --help" '[ $rc = 0 ]'
check "no password in the error output" '! grep -q s3cr3t "$work/unreach-pw"'
"$bin" --uri 'mongodb://alice:s3cr3t@host:notaport/' list 2>"$work/baduri"; rc=$?
check "malformed URI: 64 and no password" '[ $rc = 64 ] && ! grep -q s3cr3t "$work/baduri"'
# Malformed URIs must not defeat redaction: no scheme slashes, a '/' or ':' in the password.
k=0
for u in 'mongodb:/admin:PW@host' 'mongodb:/admin:SECRET@host' 'mongodb://u:Pw3SEC/RETc@127.0.0.1:1/' \
         'mongodb://u:Pw0SE:CRETi@127.0.0.1:1/'; do
  k=$((k + 1))  # numbered: the test's own output must not quote the secret either
  "$bin" --uri "$u" list >"$work/uri.out" 2>&1; rc=$?
  check "malformed URI #$k: 64, no secret in stdout or stderr" \
        '[ $rc = 64 ] && ! grep -qE "PW|SEC|CRET" "$work/uri.out"'
done
"$bin" --help >/dev/null; rc=$?
check "--help exits 0" '[ $rc = 0 ]'
# libmongoc keeps its counters in /dev/shm/mongoc-PID and removes it at exit; the tool's own
# exit skips that, and each run left a file (thousands on a cron host, then the driver's
# "Falling back to malloc for counters" on stderr once PIDs wrap).
"$bin" status "$(name shm)" >/dev/null & pid=$!; wait $pid
check "no /dev/shm/mongoc-$pid left behind by a run" '[ ! -e /dev/shm/mongoc-$pid ]'
check "--version prints the version" '"$bin" --version | grep -q "^mongolock [0-9]"'

# 11. Between fork and exec the child calls only async-signal-safe functions (the fork_check shim
#     exits 99 otherwise), and still gets its lease in the environment, replacing stale values.
n=$(name forkcheck)
if [ -n "$fork_check" ]; then
  [ -f "$fork_check" ] || bad "fork_check shim missing: $fork_check"
else
  echo "skipped: child of fork: async-signal-safe calls only (sanitizer build; the build without a sanitizer checks it)"
fi
MONGOLOCK_FENCING_TOKEN=stale LD_PRELOAD=$fork_check "$bin" run "$n" \
  sh -c 'echo "$MONGOLOCK_NAME $MONGOLOCK_FENCING_TOKEN $MONGOLOCK_OWNER"' >"$work/fc.out" 2>"$work/fc.err"; rc=$?
[ -z "$fork_check" ] ||
  check "child of fork: async-signal-safe calls only (rc=$rc $(head -c 200 "$work/fc.err"))" '[ $rc = 0 ] && ! grep -q fork_check "$work/fc.err"'
check "child of fork: lease in its environment, stale token replaced" 'grep -q "^$n [0-9][0-9]* [0-9a-f]\{32\}$" "$work/fc.out"'
LD_PRELOAD=$fork_check "$bin" run "$n" no-such-command-anywhere 2>"$work/fc.err"; rc=$?
check "command not found on PATH: 127 and the message" '[ $rc = 127 ] && grep -q "cannot run .no-such-command-anywhere.: No such file" "$work/fc.err"'
printf 'echo no-shebang-ran\n' > "$work/noexec"
LD_PRELOAD=$fork_check "$bin" run "$n" "$work/noexec" 2>"$work/fc.err"; rc=$?
check "not executable: 126 and the message" '[ $rc = 126 ] && grep -q "cannot run .*: Permission denied" "$work/fc.err"'
chmod +x "$work/noexec"
out=$(cd "$work" && PATH=/nonexistent: LD_PRELOAD=$fork_check "$bin" run "$n" noexec 2>"$work/fc.err"); rc=$?
check "script without #! found via an empty PATH entry runs with sh, as execvp" '[ $rc = 0 ] && [ "$out" = no-shebang-ran ]'

# 12. flock(1)'s -c: a shell command line as one string, under the lock.
n=$(name shellc)
out=$("$bin" run "$n" -c 'echo "$MONGOLOCK_NAME" | tr a-z A-Z && exit 3'); rc=$?
check "-c runs the string with sh, under the lock, and forwards its status" '[ $rc = 3 ] && [ "$out" = "$(echo "$n" | tr a-z A-Z)" ]'

# 13. No orphans: a `mongolock run` killed by SIGKILL (the OOM killer) takes its command down too
#     (SIGTERM to the command's process group, SIGKILL after --kill-after), instead of leaving it
#     running without the lock beside the next holder.
gone() {  # the pid in file $1 has exited (a zombie left for PID 1 to reap counts as gone)
  local p; p=$(cat "$1")
  [ ! -e "/proc/$p" ] || grep -q '^[0-9]* ([^)]*) Z' "/proc/$p/stat" 2>/dev/null
}
wait_gone() { for _ in $(seq 60); do gone "$1" && gone "$2" && return 0; sleep 0.05; done; return 1; }
n=$(name orphan)
"$bin" run "$n" sh -c "echo \$\$ > $work/orphan.pid; sleep 30 & echo \$! > $work/orphan.child; wait" & victim=$!
wait_for_file "$work/orphan.child"
kill -KILL $victim; wait $victim 2>/dev/null
check "mongolock SIGKILLed: its command and the command's child are stopped within 3 s" \
  'wait_gone "$work/orphan.pid" "$work/orphan.child"'
n=$(name orphan-stubborn)
"$bin" --kill-after 600ms run "$n" sh -c "trap '' TERM; echo \$\$ > $work/stubborn.pid; while :; do sleep 0.1; done" &
victim=$!
wait_for_file "$work/stubborn.pid"
t0=$(date +%s%N)
kill -KILL $victim; wait $victim 2>/dev/null
sleep 0.3
alive_at_300ms=$(gone "$work/stubborn.pid" && echo no || echo yes)
wait_gone "$work/stubborn.pid" "$work/stubborn.pid"; took=$(( ($(date +%s%N) - t0) / 1000000 ))
check "mongolock SIGKILLed, command ignores SIGTERM: SIGKILLed after --kill-after (alive at 300 ms: $alive_at_300ms, gone after $took ms)" \
  '[ $alive_at_300ms = yes ] && gone "$work/stubborn.pid" && [ $took -ge 550 ]'
# The supervisor itself SIGKILLed (it is a copy of mongolock, as likely an OOM victim): COMMAND
# dies with it and mongolock exits as for a command killed by SIGKILL, not 0 with the job running.
n=$(name supervisor)
"$bin" run "$n" sh -c "echo \$\$ > $work/sup.pid; sleep 30" 2>/dev/null & victim=$!
wait_for_file "$work/sup.pid"
kill -KILL "$(pgrep -P $victim)"; wait $victim; rc=$?
check "supervisor SIGKILLed: the command is stopped and run exits 137 (rc=$rc)" \
  '[ $rc = 137 ] && wait_gone "$work/sup.pid" "$work/sup.pid"'
# Without the supervisor these would run on (and hold this script's output open): end them.
kill -KILL $(cat "$work/orphan.pid" "$work/orphan.child" "$work/stubborn.pid" "$work/sup.pid") 2>/dev/null

# 14. A job that finished inside its lease exits with its own status even if the lock is no
#     longer ours at release (here the job itself frees its lock and lets another run take it).
n=$(name finished)
"$bin" run "$n" sh -c "'$bin' release --force --now '$n' 2>/dev/null; '$bin' --wait 0 run '$n' true; exit 3" \
  2>"$work/fin.err"; rc=$?
check "finished inside the lease: COMMAND's status (3), not 74, and a message saying why" \
  '[ $rc = 3 ] && grep -q "no longer ours at release" "$work/fin.err"'

# 15. A semaphore (-n) and a rw_lock (--shared / --exclusive).
n=$(name permits); d=$work/p; mkdir -p "$d"
for i in 1 2 3 4 5; do
  "$bin" run -n 2 "$n" -- sh -c "touch '$d/in.$i'; [ \$(ls '$d' | grep -c '^in') -le 2 ] || echo OVERLAP >> '$d/over'; \
    echo \$MONGOLOCK_PERMIT >> '$d/permits'; sleep 0.2; rm '$d/in.$i'" &
done
wait
check "-n 2: five commands ran, never more than two at once" \
  '[ "$(wc -l < "$d/permits")" = 5 ] && [ ! -e "$d/over" ] && [ "$(sort -u "$d/permits" | tr "\n" " ")" = "$n#1 $n#2 " ]'
"$bin" run -n 1 "$n" true 2>"$work/decl.err"; rc=$?
check "-n 1 on a name declared with 2 permits exits 64 with the reason" \
  '[ $rc = 64 ] && grep -q "declared as a semaphore of 2 permits, not a semaphore of 1" "$work/decl.err"'
n=$(name rw)
"$bin" run --shared "$n" sleep 20 & r1=$!
"$bin" run --shared "$n" sleep 20 & r2=$!
sleep 1
"$bin" --wait 0 run --shared "$n" true; rc_reader=$?
"$bin" --wait 0 run --exclusive "$n" true 2>/dev/null; rc_writer=$?
check "--shared: readers share (a third runs: $rc_reader), a writer waits (--wait 0: $rc_writer)" \
  '[ $rc_reader = 0 ] && [ $rc_writer = 75 ]'
kill -TERM $r1 $r2; wait $r1 $r2
"$bin" --wait 5s run --exclusive "$n" sh -c 'echo $MONGOLOCK_FENCING_TOKEN > '"$work/wtoken"; rc=$?
check "--exclusive runs once the readers are gone, with a token" '[ $rc = 0 ] && [ -s "$work/wtoken" ]'

# 16. A name is one kind of thing: a plain lock and a rw_lock (or semaphore) of one name would share
#     no document, so the second kind to come is refused (exit 64) instead of running beside it.
n=$(name mixed)
"$bin" run "$n" sleep 20 & holder=$!
sleep 1
"$bin" --wait 2s run --exclusive "$n" true 2>"$work/mixed.err"; rc_writer=$?
"$bin" --wait 2s run -n 2 "$n" true 2>/dev/null; rc_permit=$?
check "a plain lock's name refuses --exclusive ($rc_writer) and -n ($rc_permit) with the reason" \
  '[ $rc_writer = 64 ] && [ $rc_permit = 64 ] && grep -q "declared as a lock, not a rw_lock" "$work/mixed.err"'
kill -TERM $holder; wait $holder
n=$(name mixed)
"$bin" run --shared "$n" sleep 20 & reader=$!
sleep 1
"$bin" --wait 2s run "$n" true 2>"$work/mixed2.err"; rc=$?
check "a rw_lock's name refuses a plain run ($rc) with the reason" \
  '[ $rc = 64 ] && grep -q "declared as a rw_lock of 16 permits, not a lock" "$work/mixed2.err"'
kill -TERM $reader; wait $reader

# 17. A stopped `mongolock` (SIGSTOP to it alone, as a debugger or a swap storm would) cannot stop
#     its command when the lease runs out: its supervisor does, at the lease's local deadline (the
#     last one `mongolock` sent it), before a waiter can take over; `mongolock` exits 74 on resume.
n=$(name frozen) f=$work/frozen; mkdir -p "$f"
"$bin" --ttl 2s run "$n" -- sh -c "trap 'date +%s%N > $f/term; exit 143' TERM; touch $f/started; \
  while :; do sleep 0.05; done" & frozen=$!
wait_for_file "$f/started"
sleep 0.5
kill -STOP $frozen
"$bin" --ttl 2s --wait 15s run "$n" -- sh -c "date +%s%N > $f/second"; rc_second=$?
kill -CONT $frozen; wait $frozen; rc_frozen=$?
gap=$(( ($(cat "$f/second" 2>/dev/null || echo 0) - $(cat "$f/term" 2>/dev/null || echo 0)) / 1000000 ))
check "the supervisor stopped the job ${gap} ms before the next holder started (second $rc_second, frozen $rc_frozen)" \
  '[ $rc_second = 0 ] && [ -s "$f/term" ] && [ -s "$f/second" ] && [ "$(cat "$f/term")" -lt "$(cat "$f/second")" ] && [ $rc_frozen = 74 ]'

# 18. ... and a command that ignores SIGTERM is gone before the next holder starts, whatever
#     --kill-after says: SIGKILL comes at most a margin past the lease's deadline.
n=$(name deaf) f=$work/deaf; mkdir -p "$f"
"$bin" --ttl 2s --kill-after 5s run "$n" -- sh -c "trap '' TERM; touch $f/started; \
  while :; do date +%s%N > $f/alive.tmp && mv $f/alive.tmp $f/alive; sleep 0.02; done" 2>"$f/err" & deaf=$!
wait_for_file "$f/alive"
sleep 0.5
kill -STOP $deaf
"$bin" --ttl 2s --wait 15s run "$n" -- sh -c "date +%s%N > $f/second"; rc_second=$?
sleep 0.3  # a survivor would write once more meanwhile
kill -CONT $deaf; wait $deaf; rc_deaf=$?
gap=$(( ($(cat "$f/second" 2>/dev/null || echo 0) - $(cat "$f/alive" 2>/dev/null || echo 0)) / 1000000 ))
check "a command deaf to SIGTERM was last alive ${gap} ms before the next holder started (second $rc_second, first $rc_deaf)" \
  '[ $rc_second = 0 ] && [ -s "$f/second" ] && [ "$gap" -gt 0 ] && [ $rc_deaf = 74 ] && grep -q "local deadline" "$f/err"'

# 19. A command that finished inside its lease while `mongolock` was stopped: its own status, not
#     74 (the supervisor saw it end before the deadline), even though the lease ran out meanwhile.
n=$(name inside) f=$work/inside; mkdir -p "$f"
# A 3 s lease: the command's 0.5 s end well inside it even when a loaded machine is slow to start
# the command after the take; stopped for 3.5 s, the lease runs out meanwhile.
"$bin" --ttl 3s run "$n" -- sh -c "touch $f/started; sleep 0.5; exit 3" 2>"$f/err" & inside=$!
wait_for_file "$f/started"
kill -STOP $inside
sleep 3.5
kill -CONT $inside; wait $inside; rc=$?
check "finished inside the lease while mongolock was stopped: COMMAND's status 3 (got $rc)" '[ $rc = 3 ]'

# 20. Scheduled jobs. --once-per: the first run is recorded (status shows its token), a second host
#     that has not seen it skips with 79 and counts from then, a plain run of the name keeps the
#     record, the first host skips within the period, and the second host runs once D has passed
#     since it saw the run (another name, a short D: the first part must not depend on how fast a
#     loaded machine runs it). --hold-at-least: a --wait 0 during the hold finds the lock busy
#     (75), the lock is free after it.
n=$(name cron) f=$work/cron; mkdir -p "$f"
"$bin" --ttl 1s --wait 10s run --once-per 1h --state-dir "$f/a" "$n" -- sh -c 'echo "$MONGOLOCK_FENCING_TOKEN" > '"$f/first"; rc_first=$?
"$bin" --ttl 1s --wait 10s run --once-per 1h --state-dir "$f/b" "$n" -- touch "$f/b-ran" 2>"$f/err"; rc_b=$?
"$bin" --ttl 1s run "$n" -- true
recorded=$("$bin" status "$n" | sed -n 's/.*"last_run_token_str":"\([0-9]*\)".*/\1/p')
"$bin" --ttl 1s --wait 10s run --once-per 1h --state-dir "$f/a" "$n" -- touch "$f/a-again" 2>/dev/null; rc_a=$?
check "--once-per: the run was recorded (token $recorded), a host new to it skipped ($rc_b) and said so, the first host skips within the period ($rc_a)" \
  '[ $rc_first = 0 ] && [ "$recorded" = "$(cat "$f/first")" ] && [ $rc_b = 79 ] && [ ! -e "$f/b-ran" ] && grep -q "skipped: this host first saw its last run" "$f/err" && [ $rc_a = 79 ] && [ ! -e "$f/a-again" ]'
n=$(name cron-later)
"$bin" --ttl 1s --wait 500ms run --once-per 1s --state-dir "$f/a" "$n" -- true
"$bin" --ttl 1s --wait 500ms run --once-per 1s --state-dir "$f/b" "$n" -- touch "$f/b-later" 2>/dev/null; rc_new=$?
sleep 1.2
"$bin" --ttl 1s --wait 500ms run --once-per 1s --state-dir "$f/b" "$n" -- touch "$f/b-later"; rc_b=$?
check "--once-per: a host skips a run new to it ($rc_new), and runs once it saw that run D ago ($rc_b)" \
  '[ $rc_new = 79 ] && [ $rc_b = 0 ] && [ -e "$f/b-later" ]'
n=$(name hold)
start_ms=$(( $(date +%s%N) / 1000000 ))
"$bin" --ttl 500ms run --hold-at-least 4s "$n" -- touch "$f/holding" & holding=$!
wait_for_file "$f/holding"
sleep 1.2  # past two leases of 500 ms: still held only if renewed
"$bin" --wait 0 run "$n" -- true 2>/dev/null; rc_busy=$?
wait $holding; rc_hold=$?
held_ms=$(( $(date +%s%N) / 1000000 - start_ms ))
"$bin" --wait 0 run "$n" -- true; rc_free=$?
check "--hold-at-least 4s: busy during the hold ($rc_busy), mongolock exited after ${held_ms} ms ($rc_hold), free then ($rc_free)" \
  '[ $rc_busy = 75 ] && [ $rc_hold = 0 ] && [ "$held_ms" -ge 4000 ] && [ $rc_free = 0 ]'

n=$(name hold-signal); rm -f "$f/holding"
"$bin" --ttl 500ms run --hold-at-least 60s "$n" -- touch "$f/holding" 2>"$f/hold-err" & holding=$!
wait_for_file "$f/holding"
sleep 0.3
kill -TERM $holding
wait $holding; rc_hold=$?
"$bin" --wait 0 run "$n" -- true; rc_free=$?
check "--hold-at-least: a signal ends the hold early ($rc_hold, COMMAND's status) and frees the lock ($rc_free)" \
  '[ $rc_hold = 0 ] && [ $rc_free = 0 ] && grep -q "ends early" "$f/hold-err"'

# 21. The verdict is the supervisor's word: a supervisor that stopped the job because the lease's
#     local deadline passed by its reading makes `run` exit 74, even when `mongolock` already holds
#     a later deadline (a renewal answered within a millisecond of the old deadline and sent just
#     after the supervisor read it; here the supervisor's boot clock is set 60 s ahead, so it
#     finds the deadline passed at once while `mongolock`'s lease runs on).
if [ -n "$supervisor_ahead" ]; then
  n=$(name ahead) f=$work/ahead; mkdir -p "$f"
  MONGOLOCK_SUPERVISOR_AHEAD_MS=60000 LD_PRELOAD=$supervisor_ahead "$bin" --ttl 10s run "$n" -- \
    sh -c "touch $f/started; sleep 30" 2>"$f/err"; rc=$?
  check "supervisor stopped the job at the deadline by its clock, mongolock's deadline later: 74 (got $rc: $(tr '\n' ' ' < "$f/err"))" \
    '[ $rc = 74 ] && grep -q "local deadline" "$f/err" && ! grep -q "supervisor of the command was killed" "$f/err"'
else
  echo "skipped: the supervisor's verdict with its clock ahead (sanitizer build; the build without a sanitizer checks it)"
fi

# 22. Two --ttls on one name (docs/design.md section 7, "The first renewal"): C (10 s) holds, A
#     (10 s) and then B (30 s) wait in line; C's release lets A in, A hands to B with A's expiry in
#     the document, so B's first deadline is its entry write + 10 s - 3 s. B's first renewal is due
#     by that clock: B keeps the lock past it and its command's status is the exit status (before,
#     its first renewal came 10 s after the grant: "lease lost", 74).
n=$(name two-ttls) f=$work/ttls; mkdir -p "$f"
"$bin" --ttl 10s run "$n" -- sh -c "touch $f/c; sleep 4" & c=$!
wait_for_file "$f/c"
"$bin" --ttl 10s run "$n" -- true & a=$!
sleep 1
"$bin" --ttl 30s run "$n" -- sh -c "sleep 8; touch $f/b" 2>"$f/b-err" & b=$!
wait $c $a; wait $b; rc=$?
check "a lock handed over with a shorter expiry is kept past its first deadline: 0 (got $rc: $(tr '\n' ' ' < "$f/b-err"))" \
  '[ $rc = 0 ] && [ -e "$f/b" ]'

# 23. A holder silent past its ttl (killed): status and a busy --wait 0 say it may have crashed
#     and when a waiter takes over; silent for less than 3 x its ttl, --wait 0 does not confirm it.
n=$(name silent)
"$bin" --ttl 2s --label crashed-job run "$n" sh -c "touch $work/s23; exec sleep 34" & victim=$!
wait_for_file "$work/s23"
kill -KILL $victim; wait $victim 2>/dev/null; pkill -KILL -f "sleep 34" 2>/dev/null
sleep 2.5
"$bin" status "$n" >/dev/null 2>"$work/s23.status"; rc_status=$?
"$bin" --wait 0 run "$n" true 2>"$work/s23.busy"; rc_busy=$?
hint="(silent for longer than its ttl of 2000 ms by the two wall clocks: it may have crashed; a waiter takes over once it has itself seen no renewal for that ttl plus its margin, and --wait 0 watches only a holder silent for over 3 x its ttl)"
check "status of a silent holder: held (rc=$rc_status), and a hint on stderr ($(head -c 400 "$work/s23.status"))" \
  '[ $rc_status = 0 ] && grep -qF "mongolock: lock '"'"'$n'"'"' is held by" "$work/s23.status" && grep -qF "$hint" "$work/s23.status"'
check "a busy --wait 0 on a silent holder gives the hint too (rc=$rc_busy: $(head -c 400 "$work/s23.busy"))" \
  '[ $rc_busy = 75 ] && grep -qF "label crashed-job), renewed" "$work/s23.busy" && grep -qF "$hint" "$work/s23.busy"'
check "a live holder gets no such hint" '! grep -q "silent for longer" "$work/busy"'

# 24. mongolock fence (docs/cli.md "Fenced writes"): under `run` it takes the lease's token from
#     MONGOLOCK_FENCING_TOKEN; a later holder's write raises the fence, and the earlier token is
#     then refused (76, both tokens named), the document unchanged; bad input exits 64.
n=$(name fence) coll="fenced_$RANDOM$RANDOM"
"$bin" run "$n" -- sh -c 'echo "$MONGOLOCK_FENCING_TOKEN" > '"$work"'/t24a' || true
"$bin" run "$n" -- sh -c 'echo "$MONGOLOCK_FENCING_TOKEN" > '"$work"'/t24b; "$0" fence --upsert "mongolock_cli_test.'"$coll"'" "{\"_id\": \"doc\"}" "{\"\$set\": {\"by\": \"b\"}}"' "$bin" \
  > "$work/s24.b" 2>&1; rc_b=$?
MONGOLOCK_FENCING_TOKEN=$(cat "$work/t24a") "$bin" fence "mongolock_cli_test.$coll" '{"_id": "doc"}' '{"$set": {"by": "a"}}' \
  > "$work/s24.a" 2>&1; rc_a=$?
"$bin" fence --token "$(cat "$work/t24b")" "mongolock_cli_test.$coll" '{"_id": "doc"}' '{"$set": {"again": 1}}' \
  > "$work/s24.b2" 2>&1; rc_b2=$?
"$bin" fence --token 5 "mongolock_cli_test.$coll" '{"_id": "doc"}' '{"$set": {"fence": 1}}' > "$work/s24.bad" 2>&1; rc_bad=$?
check "fence under run writes with the lease's token (rc=$rc_b: $(head -c 300 "$work/s24.b"))" \
  '[ $rc_b = 0 ] && grep -qF "{\"matched\":0,\"upserted\":1}" "$work/s24.b"'
check "an earlier token is fenced out: 76, both tokens named (rc=$rc_a: $(head -c 300 "$work/s24.a"))" \
  '[ $rc_a = 76 ] && grep -qF "$(cat "$work/t24a")" "$work/s24.a" && grep -qF "$(cat "$work/t24b")" "$work/s24.a"'
check "the same token writes again (rc=$rc_b2: $(head -c 300 "$work/s24.b2"))" \
  '[ $rc_b2 = 0 ] && grep -qF "{\"matched\":1,\"upserted\":0}" "$work/s24.b2"'
check "an update of the fence field is a usage error: 64 (rc=$rc_bad: $(head -c 300 "$work/s24.bad"))" \
  '[ $rc_bad = 64 ] && grep -q "touches the fence field" "$work/s24.bad"'

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
