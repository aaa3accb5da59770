#!/usr/bin/env bash
# The benchmark command: Release build; the counted and modelled rows (mongolock-model, no server);
# then its own single-node replica set (majority writes, as in production), every timed scenario,
# a table on stdout, results.json, model.json and PNG plots in build/release/bench.
#   scripts/bench.sh [SECONDS_PER_MEASUREMENT]   (default 2; scenarios 1-2 take 3 rounds of each)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-2}
scripts/install-deps.sh
if ! command -v gnuplot >/dev/null; then
  echo "[bench] installing gnuplot-nox for the plots"
  ${SUDO:-$( [ "$(id -u)" -ne 0 ] && echo sudo)} apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null \
    || { ${SUDO:-$( [ "$(id -u)" -ne 0 ] && echo sudo)} apt-get update -qq && \
         ${SUDO:-$( [ "$(id -u)" -ne 0 ] && echo sudo)} apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null; }
fi
cmake --preset release -DMONGOLOCK_BUILD_TESTS=OFF -DMONGOLOCK_BUILD_BENCH=ON >/dev/null
cmake --build --preset release -j"$(nproc)" --target mongolock-bench mongolock-model
out=build/release/bench
mkdir -p "$out"
# The counted and modelled rows first: no server (bench/model.cpp).
build/release/bench/mongolock-model --out "$out" --seconds "$seconds" | tee "$out/model.txt"
uri=$(scripts/mongod start rs1 "$out/mongod")
trap 'scripts/mongod stop "$out/mongod" 2>/dev/null' EXIT
kind=$(cat "$out/mongod/kind")

# The DistributedLock.MongoDB peer, when NuGet can restore it.
peer_args=()
peer_dir=bench/peers/distributedlock
if command -v dotnet >/dev/null && dotnet build "$peer_dir" -c Release -o "$out/peer" -v quiet >"$out/peer-build.log" 2>&1; then
  peer_args=(--peer "$out/peer/DistributedLockPeer.dll")
else
  echo "[bench] peer DistributedLock.MongoDB skipped: $(grep -o 'NU1[0-9]*[^.]*' "$out/peer-build.log" | head -n 1 || echo 'dotnet build failed')"
fi

build/release/bench/mongolock-bench --uri "$uri" --out "$out" --server-kind "$kind" --seconds "$seconds" \
  "${peer_args[@]}" | tee "$out/table.txt"

gnuplot <<GP
set terminal png size 900,420 font ",10"
set output "$out/handoff.png"
set title "Hand-off to another waiter: release -> its acquisition (2 processes x 4 waiters, 10 ms hold, 20 ms think; $kind)"
set xlabel "ms"; set ylabel "fraction of hand-offs"; set logscale x; set key bottom right; set grid
handoff_plot = "plot '$out/handoff-mongolock.dat' using 1:2 with lines lw 2 title 'mongolock', '$out/handoff-seed.dat' using 1:2 with lines lw 2 title 'seed article (100 ms retry)', '$out/handoff-dlreimpl.dat' using 1:2 with lines lw 2 title 'DistributedLock.MongoDB algorithm (re-implemented)'"
eval handoff_plot
set terminal svg size 900,420 font ",10"
set output "$out/handoff.svg"
eval handoff_plot
set terminal png size 900,420 font ",10"
set output "$out/independent.png"
set title "Independent locks: acquire+release cycles per second (server: $kind)"
unset logscale; set logscale x 2; set xlabel "concurrent locks (k)"; set ylabel "cycles/s"; set key top left
plot "$out/independent.dat" using 1:2 with linespoints lw 2 title "mongolock (one io thread, 4 workers)", \
     "$out/independent.dat" using 1:3 with linespoints lw 2 title "floor: libmongoc, min(k,4) threads"
GP
echo "[bench] results: $out/results.json, plots: $out/handoff.png $out/independent.png"
