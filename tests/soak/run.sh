#!/usr/bin/env bash
# `make soak`: the long forms of the robustness programs of tests/crash against the real
# sluiced of BUILD_DIR (CI runs their short forms through ctest). SLUICE_SOAK=1 selects the long
# form of each: 100 kill -9 cycles, 100 000 hostile frames with the memory check, the connection
# floods with larger and slower phases and their memory bounds. Each program prints its seed
# and figures; SLUICE_CRASH_SEED=<seed> replays a seed. Exit status 0 only when every item
# passed; the figures are repeated at the end.
#   usage: tests/soak/run.sh BUILD_DIR [ITEM...]    (items: kill9_cycles hostile_clients conn_flood)
set -uo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [ITEM...]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
shift
items=("$@")
[ ${#items[@]} -gt 0 ] || items=(kill9_cycles hostile_clients conn_flood)
export SLUICE_SLUICED="$build/sluiced" SLUICE_SOAK=1
work=$(mktemp -d "${TMPDIR:-/tmp}/sluice-soak.XXXXXX")
trap 'rm -rf "$work"' EXIT

status=0
summary=()
for item in "${items[@]}"; do
  bin="$build/tests/crash/crash_test_$item"
  if [ ! -x "$bin" ]; then
    echo "soak: $bin is not built" >&2
    status=1
    continue
  fi
  echo "=== soak: $item"
  start=$(date +%s)
  "$bin" 2>&1 | tee "$work/$item.log"
  rc=${PIPESTATUS[0]}
  took=$(( $(date +%s) - start ))
  if [ "$rc" -eq 0 ]; then
    summary+=("soak: $item ok ($took s)")
  elif [ "$rc" -eq 77 ]; then
    summary+=("soak: $item skipped (io_uring or file limits unavailable)")
  else
    summary+=("soak: $item FAILED (exit $rc, $took s)")
    status=1
  fi
done

echo
echo "=== soak: figures"
for item in "${items[@]}"; do
  grep -E '^(kill9 cycles|hostile|flood): ' "$work/$item.log" 2>/dev/null
done
printf '%s\n' "${summary[@]}"
exit $status
