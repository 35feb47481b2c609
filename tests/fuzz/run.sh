#!/usr/bin/env bash
# Runs every libFuzzer target built in BUILD_DIR/tests/fuzz for SECONDS each,
# starting from a seed corpus made from tests/vectors (sl_fuzz_seeds).
#   usage: tests/fuzz/run.sh BUILD_DIR SECONDS
# Targets run FUZZ_JOBS at a time (default 2, or 1 on a single core). Work
# files go to a scratch directory outside the repository (FUZZ_WORK to pick
# it); it is removed when every target passes and kept otherwise. Exit
# status: 0 when every target ran clean, 1 when one crashed, leaked, timed
# out or broke an invariant (its crashing input path is printed).
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
seconds=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin_dir="$build/tests/fuzz"
cores=$(nproc 2>/dev/null || echo 1)
jobs=${FUZZ_JOBS:-$(( cores < 2 ? 1 : 2 ))}
work=${FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/sluice-fuzz.XXXXXX")}
mkdir -p "$work"

targets=()
for bin in "$bin_dir"/fuzz_*; do
  [ -x "$bin" ] && targets+=("$(basename "$bin")")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no fuzz_* executables in $bin_dir" >&2
  exit 1
fi
# Sources whose executable was not built (their code is not there yet).
for src in "$repo"/tests/fuzz/fuzz_*.c; do
  name=$(basename "$src" .c)
  [ -x "$bin_dir/$name" ] || echo "fuzz: $name skipped (not built: the code it fuzzes is missing)"
done

rm -rf "$work/seeds"
"$bin_dir/sl_fuzz_seeds" "$repo/tests/vectors" "$work/seeds"

# libFuzzer reports the crash and writes the input itself; abort_on_error
# would make it report the same crash twice.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One target: a writable corpus (new inputs land there), the seeds read-only,
# crash/leak/timeout inputs written under artifacts/<target>/.
run_target() {
  local name=$1
  local corpus="$work/corpus/$name" art="$work/artifacts/$name" log="$work/logs/$name.log"
  mkdir -p "$corpus" "$art" "$work/seeds/$name"
  local rc=0
  timeout --kill-after=10 $(( seconds + 120 )) \
    "$bin_dir/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$art/" "$corpus" "$work/seeds/$name" \
    >"$log" 2>&1 || rc=$?
  echo "$rc" >"$work/logs/$name.rc"
}

mkdir -p "$work/logs"
start=$(date +%s)
running=0
for name in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$(( running - 1 ))
  fi
  run_target "$name" &
  running=$(( running + 1 ))
done
wait

# One line per target from libFuzzer's final stats and last status line.
failed=0
for name in "${targets[@]}"; do
  log="$work/logs/$name.log"
  rc=$(cat "$work/logs/$name.rc" 2>/dev/null || echo 1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  status=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' | tail -1 || true)
  if [ "$rc" -eq 0 ]; then
    printf 'fuzz: %-16s ok    runs %-10s %s\n' "$name" "${runs:-?}" "${status:-no coverage line}"
  else
    failed=1
    printf 'fuzz: %-16s FAIL  exit %s, runs %s %s\n' "$name" "$rc" "${runs:-?}" "$status"
    echo "----- $name: end of $log"
    tail -n 60 "$log"
    for input in "$work/artifacts/$name"/*; do
      [ -e "$input" ] || continue
      echo "fuzz: $name crashing input: $input"
      echo "fuzz:   reproduce with $bin_dir/$name $input"
    done
    echo "-----"
  fi
done

echo "fuzz: ${#targets[@]} targets, ${seconds} s each, $jobs at a time, $(( $(date +%s) - start )) s"
if [ "$failed" -ne 0 ]; then
  echo "fuzz: FAILED; logs, corpora and crashing inputs kept in $work"
  exit 1
fi
[ -n "${FUZZ_WORK:-}" ] || rm -rf "$work"
