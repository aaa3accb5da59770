#!/usr/bin/env bash
# Obtains a MongoDB server binary for tests, examples and benchmarks, caches it outside
# the repository, and prints its path. Order of preference:
#   1. $MONGOLOCK_MONGOD (a mongod you already have);
#   2. a cached binary from an earlier run;
#   3. the official mongod shipped inside a NuGet package (EphemeralMongo*), via `dotnet restore`;
#   4. LAST RESORT, clearly labelled: the jongodb emulator from npm. It is not MongoDB: it lacks
#      update pipelines, $$NOW and $currentDate, and its findAndModify is not atomic. The lock
#      does not use those; the integration suite `server` (test/integration/server_test.cpp)
#      says what the server is.
# Writes "$cache/kind" = mongod | jongodb next to the binary. MONGOLOCK_REFETCH=1 ignores the cache.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MONGOLOCK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mongolock}
mkdir -p "$cache"
log() { echo "[mongod] $*" >&2; }

if [ -n "${MONGOLOCK_MONGOD:-}" ]; then
  [ -x "$MONGOLOCK_MONGOD" ] || { log "ERROR: MONGOLOCK_MONGOD=$MONGOLOCK_MONGOD is not executable"; exit 1; }
  echo "$MONGOLOCK_MONGOD"; exit 0
fi
if [ -z "${MONGOLOCK_REFETCH:-}" ] && [ -x "$cache/bin/server" ] && [ -f "$cache/kind" ]; then
  echo "$cache/bin/server"; exit 0
fi
mkdir -p "$cache/bin"

try_nuget() {
  command -v dotnet >/dev/null || { log "dotnet not found: skipping NuGet"; return 1; }
  local pkgdir="$cache/nuget" id
  for id in EphemeralMongo8.runtime.linux-x64 EphemeralMongo7.runtime.linux-x64 \
            EphemeralMongo7.runtime.ubuntu.22.04-x64 EphemeralMongo6.runtime.ubuntu.22.04-x64; do
    log "trying NuGet package $id"
    if dotnet restore "$here/../tools/nuget-mongod/mongod.csproj" -p:MongoPackage="$id" \
         --packages "$pkgdir" -v quiet >"$cache/nuget-$id.log" 2>&1; then
      local bin
      bin=$(find "$pkgdir" -type f -name mongod -path '*linux*' | head -n 1)
      if [ -n "$bin" ]; then
        cp "$bin" "$cache/bin/server" && chmod +x "$cache/bin/server"
        if "$cache/bin/server" --version >/dev/null 2>&1; then
          echo mongod > "$cache/kind"; log "using mongod from $id"; return 0
        fi
        log "mongod from $id does not run here (ldd: $(ldd "$cache/bin/server" | grep 'not found' | tr '\n' ' '))"
        rm -f "$cache/bin/server"
      fi
    else
      log "  not available: $(grep -o 'NU1[0-9]*[^.]*' "$cache/nuget-$id.log" | head -n 1)"
    fi
  done
  return 1
}

try_jongodb() {
  command -v npm >/dev/null || { log "npm not found: cannot fetch jongodb"; return 1; }
  log "LAST RESORT: no real mongod could be obtained; installing the jongodb emulator from npm"
  (cd "$cache" && npm install --no-audit --no-fund --silent --prefix "$cache/npm" \
      @jongodb/memory-server-bin-linux-x64-gnu@0.1.6 >/dev/null 2>&1) || return 1
  cp "$cache/npm/node_modules/@jongodb/memory-server-bin-linux-x64-gnu/bin/jongodb" "$cache/bin/server"
  chmod +x "$cache/bin/server"
  echo jongodb > "$cache/kind"
}

if try_nuget || try_jongodb; then
  echo "$cache/bin/server"; exit 0
fi
log "ERROR: no MongoDB server could be obtained (tried: \$MONGOLOCK_MONGOD, NuGet EphemeralMongo*, npm jongodb)."
log "Set MONGOLOCK_MONGOD=/path/to/mongod or MONGOLOCK_TEST_URI=mongodb://... and retry."
exit 1
