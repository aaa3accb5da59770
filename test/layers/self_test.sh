#!/usr/bin/env bash
# check_layers.sh must catch each kind of breach: it runs on a copy of the tree with one breach
# planted at a time, and must fail naming it; on the tree as it is, it must pass.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fresh() {
  rm -rf "$work/tree" && mkdir -p "$work/tree" && cp -r "$root/src" "$root/include" "$work/tree/"
}
expect_breach() {  # $1: what is planted, $2: the text the checker must print
  if out=$(bash "$here/check_layers.sh" "$work/tree" 2>&1); then
    echo "FAIL: $1 passed the check"; exit 1
  fi
  grep -qF -- "$2" <<<"$out" || { echo "FAIL: $1: expected '$2' in:"; echo "$out"; exit 1; }
  echo "ok: $1"
}

bash "$here/check_layers.sh" "$root" >/dev/null || { echo "FAIL: the tree breaks the rule"; exit 1; }
echo "ok: the tree as it is"

fresh; echo '#include "sansio/backoff.hpp"' >>"$work/tree/src/store/bson_util.hpp"
expect_breach "store includes sansio" "src/store/bson_util.hpp (store) includes sansio/backoff.hpp"
fresh; echo '#include "engine/spawn.hpp"' >>"$work/tree/src/model/utf8.hpp"
expect_breach "model includes engine" "src/model/utf8.hpp (model) includes engine/spawn.hpp"
fresh; echo '#include "mongolock/lock.hpp"' >>"$work/tree/src/sansio/backoff.hpp"
expect_breach "sansio includes a public operation" "src/sansio/backoff.hpp (sansio) includes the public mongolock/lock.hpp"
fresh; echo '#include "engine/spawn.hpp"' >>"$work/tree/include/mongolock/lease.hpp"
expect_breach "a public header includes src/" "include/mongolock/lease.hpp includes engine/spawn.hpp"
fresh; printf 'void lease_state::start_again() {}\n' >>"$work/tree/src/api/lease.cpp"
expect_breach "an engine header implemented in api" "src/api/lease.cpp (api) defines members of lease_state"
fresh; mkdir "$work/tree/src/detail" && touch "$work/tree/src/detail/x.hpp"
expect_breach "a folder that is no layer" "src/detail/ is not a layer"
fresh; echo '#include "engine/provider_impl.hpp"' >>"$work/tree/src/primitives/semaphore.cpp"
expect_breach "a primitive past its door to the engine" "src/primitives/semaphore.cpp (primitives) includes engine/provider_impl.hpp: the primitives reach the engine through compose.hpp only"
fresh; touch "$work/tree/src/loose.cpp"
expect_breach "a file outside every layer" "src/loose.cpp lies outside every layer"
