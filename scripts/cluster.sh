#!/bin/sh
# make cluster: three sluiced in cluster mode on this machine (docs/cluster.md),
# client ports 8090..8092, replica ports 9090..9092, HTTP 3000..3002, WebSocket
# 8100..8102 (each door binds its own address: the roster's http and websocket
# ports are read but not used yet), data in build/cluster/
# (one directory per node, kept between runs). Ctrl-C stops all three.
# A node whose data directory does not exist yet is a new cluster's: it starts
# with --format-cluster; later runs recover each node from its own directory
# (docs/cluster.md, "Formatting"). rm -r build/cluster to start a new cluster.
set -eu
sluiced=${1:-build/sluiced}
dir=${2:-build/cluster}
mkdir -p "$dir"
roster="$dir/cluster.toml"
{
    printf '[cluster]\nenabled = true\nname = "local"\n\n[cluster.auth]\nenabled = true\n'
    for i in 0 1 2; do
        printf '\n[[cluster.nodes]]\nname = "node-%s"\nip = "127.0.0.1"\nreplica_id = %s\n' "$i" "$i"
        printf 'ports = { tcp = 809%s, tcp_replica = 909%s, http = 300%s, websocket = 810%s }\n' \
            "$i" "$i" "$i" "$i"
    done
} > "$roster"
# A secret for this run only: every node gets the same one from the environment.
IGGY_CLUSTER_AUTH_SHARED_SECRET=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
export IGGY_CLUSTER_AUTH_SHARED_SECRET
pids=""
trap 'kill $pids 2>/dev/null; wait' INT TERM EXIT
for i in 0 1 2; do
    format=""
    [ -d "$dir/data-$i" ] || format="--format-cluster"
    IGGY_SYSTEM_PATH="$dir/data-$i" IGGY_HTTP_ADDRESS="127.0.0.1:300$i" \
        IGGY_WEBSOCKET_ADDRESS="127.0.0.1:810$i" "$sluiced" --config "$roster" --replica-id "$i" $format \
        --with-default-root-credentials > "$dir/node-$i.log" 2>&1 &
    pids="$pids $!"
done
echo "three nodes started (pids$pids); logs in $dir/node-*.log; Ctrl-C stops them"
sleep 2
grep -h "replica link\|replica plane" "$dir"/node-*.log || true
wait
