#!/usr/bin/env bash
# Runs a Boost.Test binary with its whole log (each case entered and left) kept in a file, and
# prints little: on success the summary; on failure every failed check with its case, a
# sanitizer's report from its first line, the case that was running last and the end of the log.
# A long suite's log is hundreds of lines, and a failure in its middle would otherwise be lost
# from a shortened CI transcript. A hang: after LIMIT seconds (below ctest's own timeout) the
# binary gets SIGABRT, which Boost.Test reports as a fatal error in the case that was running (it
# then goes on with the next case), and SIGKILL 5 s later if it is still there.
# Usage: quiet_log.sh LIMIT_SECONDS BINARY [ARGS...]
set -u
limit=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
timeout --signal=ABRT --kill-after=5 "$limit" "$@" --log_level=test_suite >"$log" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then
  tail -n 3 "$log"
  exit 0
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "== stopped after $limit s (exit $rc); the failed checks (a hang: the case named with SIGABRT):"
else
  echo "== failed (exit $rc); the failed checks:"
fi
grep -E "error: in|fatal error: in|exception|runtime error:" "$log" | head -n 60
sanitizer='(ERROR|WARNING): (Address|Leak|Thread|UndefinedBehavior)Sanitizer|runtime error:'
first=$(grep -n -m 1 -E "$sanitizer" "$log" | cut -d: -f1)
if [ -n "$first" ]; then
  echo "== the sanitizer's report, from line $first:"
  tail -n "+$first" "$log" | head -n 300
fi
echo "== the case running when it ended:"
grep "Entering test case" "$log" | tail -n 1
echo "== the end of the log:"
tail -n 40 "$log"
exit "$rc"
