#!/usr/bin/env bash
# Bytes sluiced reads, and its CPU, per 1 MB record polled: starts SLUICED on PORT with a
# temporary data directory, writes N records of 1000 x 1000 B with `sluice-bench pp`, then
# polls them three times with `sluice-bench pc`, reading /proc/<pid>/io (rchar) and
# /proc/<pid>/stat around the polls (docs/benchmarks.md, "A peek reads the header only").
#   bench/poll_bytes.sh [SLUICED] [PORT] [N]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
sluiced=${1:-$here/build/sluiced}
port=${2:-18123}
n=${3:-1000}
bench=${SLUICE_BENCH:-$here/build/bench/sluice-bench}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
cat > "$dir/sluiced.toml" <<EOT
[system]
path = "$dir/data"
[tcp]
address = "127.0.0.1:$port"
[http]
enabled = false
EOT
"$sluiced" --config "$dir/sluiced.toml" --with-default-root-credentials > "$dir/log" 2>&1 &
pid=$!
sleep 1
"$bench" --no-ceiling -b "$n" pp -p 1 tcp --server-address "127.0.0.1:$port" > "$dir/pp.log"
rchar() { awk '/^rchar/ {print $2}' "/proc/$pid/io"; }
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
r0=$(rchar); c0=$(cpu)
for i in 1 2 3; do
    "$bench" --no-ceiling -b "$n" pc -c 1 tcp --server-address "127.0.0.1:$port" > "$dir/pc$i.log"
done
r1=$(rchar); c1=$(cpu)
tick=$(getconf CLK_TCK)
echo "$sluiced: read $(( (r1 - r0) / 3 / n )) bytes per 1 MB record polled;" \
     "server CPU $(( (c1 - c0) * 1000000 / tick / 3 / n )) us per record;" \
     "MB/s: $(grep -ho 'Total throughput: [0-9.]* MB/s' "$dir"/pc*.log | awk '{print $3}' | tr '\n' ' ')"
