#!/usr/bin/env bash
# Runs a Boost.Test binary with its whole log (each case entered and left) kept in a file, and
# prints little: on success the summary; on failure every failed check with its case, the case
# that was running last and the end of the log (a sanitizer's report). A hang: after LIMIT seconds
# (before ctest's own timeout) the binary gets SIGABRT, which Boost.Test reports as a fatal error
# in the case that was running, then SIGKILL 5 s later if it is still there. A long suite's log is hundreds of lines,
# and a failure in its middle would otherwise be lost from a shortened CI transcript.
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
echo "== failed (exit $rc); the failed checks:"
grep -E "error: in|fatal error: in|exception" "$log" | head -n 60
echo "== the case running when it ended:"
grep "Entering test case" "$log" | tail -n 1
echo "== the end of the log:"
tail -n 40 "$log"
exit "$rc"
