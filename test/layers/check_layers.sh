#!/usr/bin/env bash
# The layer rule of docs/design.md section 12, checked over the includes:
#   model <- sansio <- engine -> store (store <- model only); api and primitives on top (the
#   primitives drive machines of sansio too: a semaphore's declaration, declare_fsm);
#   include/mongolock/ includes nothing of src/; in primitives only compose.hpp and compose.cpp
#   include from engine (the primitives' one door to it).
# And no header implemented in a higher layer: a class declared in src/L/ has its members
# defined in src/L/ only.
# Usage: check_layers.sh [ROOT]   (exit 0: the rule holds; 1: each breach printed)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"

declare -A allowed=(
  [model]="model"
  [sansio]="model sansio"
  [store]="model store"
  [engine]="model sansio store engine"
  [api]="model sansio store engine api"
  [primitives]="model sansio engine primitives"
)
# The public vocabulary (plain data, no operations) any layer may use.
vocabulary="mongolock/error.hpp mongolock/limits.hpp mongolock/options.hpp mongolock/stats.hpp"
# Layers that implement or use the public operations.
public_users="engine api primitives"

breaches=0
breach() { echo "layers: $*"; breaches=$((breaches + 1)); }

for dir in src/*/; do
  layer=$(basename "$dir")
  [[ -n ${allowed[$layer]+x} ]] || { breach "src/$layer/ is not a layer of docs/design.md section 12"; continue; }
done
for f in src/*.cpp src/*.hpp; do
  [[ -e $f ]] && breach "$f lies outside every layer"
done

# One grep over the tree, and no process per line after it: a fork costs milliseconds on a small
# VM, and this runs ten times in its self-test.
# The layer of src/LAYER/...: $1 a path.
layer_of() { local rest=${1#src/}; layer=${rest%%/*}; }

while IFS= read -r line; do
  f=${line%%:*}
  inc=${line#*:}
  inc=${inc#\#include \"}
  inc=${inc%%\"*}
  layer_of "$f"
  [[ -n ${allowed[$layer]+x} ]] || continue
  top=${inc%%/*}
  if [[ $top == mongolock ]]; then
    [[ " $vocabulary " == *" $inc "* ]] && continue
    [[ " $public_users " == *" $layer "* ]] && continue
    breach "$f ($layer) includes the public $inc"
  elif [[ " ${allowed[$layer]} " != *" $top "* ]]; then
    breach "$f ($layer) includes $inc ($top)"
  elif [[ $layer == primitives && $top == engine && $f != src/primitives/compose.[ch]pp ]]; then
    breach "$f (primitives) includes $inc: the primitives reach the engine through compose.hpp only"
  fi
done < <(find src -name '*.hpp' -o -name '*.cpp' | sort | xargs grep -H '^#include "' || true)

while IFS= read -r line; do
  f=${line%%:*}
  inc=${line#*:}
  inc=${inc#\#include \"}
  inc=${inc%%\"*}
  [[ $inc == mongolock/* || $inc == mongolock.hpp ]] || breach "$f includes $inc, which is not public"
done < <(find include -name '*.hpp' | sort | xargs grep -H '^#include "' || true)

# Members defined out of line (`name::member(` at the start of a line, after the return type)
# belong to a class of the same layer, or to a public class (api and primitives implement
# include/mongolock/).
declare -A home=()
class_re='^(struct|class) ([A-Za-z_0-9]+)'
while IFS= read -r line; do
  file=${line%%:*}
  [[ ${line#*:} =~ $class_re ]] || continue
  layer_of "$file"
  home[${BASH_REMATCH[2]}]=$layer
done < <(grep -HE '^(struct|class) [A-Za-z_0-9]+( final)? *(:[^;]*)?\{' $(find src -name '*.hpp') || true)
member_re='([A-Za-z_0-9]+)::(~?[A-Za-z_0-9]+|operator[^(]*)\('
while IFS= read -r line; do
  file=${line%%:*}
  layer_of "$file"
  [[ ${line#*:} =~ $member_re ]] || continue
  cls=${BASH_REMATCH[1]}
  [[ -z ${home[$cls]+x} ]] && continue
  [[ ${home[$cls]} == "$layer" ]] || breach "$file ($layer) defines members of $cls, declared in src/${home[$cls]}/"
done < <(grep -HE '^[A-Za-z_].*\b[A-Za-z_0-9]+::~?[A-Za-z_0-9]+\(' $(find src -name '*.cpp') | grep -v '^[^:]*:\s*//' || true)

if ((breaches)); then
  echo "layers: $breaches breach(es) of the rule in docs/design.md section 12"
  exit 1
fi
echo "layers: the rule holds ($(find src include -name '*.[ch]pp' | wc -l) files)"
