#!/usr/bin/env bash
# CTest fixture: start/stop the integration tests' server. With MONGOLOCK_TEST_URI set, the
# tests use that server instead and nothing is started.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
action=$1 dir=$2
if [ -n "${MONGOLOCK_TEST_URI:-}" ]; then
  mkdir -p "$dir"; echo "$MONGOLOCK_TEST_URI" > "$dir/uri"; echo external > "$dir/kind"; exit 0
fi
case "$action" in
  start) "$here/../scripts/mongod" start rs1 "$dir" ;;
  stop) "$here/../scripts/mongod" stop "$dir" ;;
esac
