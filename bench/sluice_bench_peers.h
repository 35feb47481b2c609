/* sluice-bench's `peers` transport: the same plan run against NATS
 * JetStream (file storage) and Redis Streams, where nats-server and
 * redis-server are installed, each started here on a loopback port in a
 * temporary directory and spoken to over a raw socket (NATS's text protocol,
 * RESP): no client library for a few requests. Optional: nothing else in
 * sluice-bench, and no test, needs them. */
#ifndef SLUICE_BENCH_PEERS_H
#define SLUICE_BENCH_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sluice_bench_run.h"

typedef struct sb_peer {
    sb_target_t target;
    pid_t pid;
    unsigned short port;
    char dir[320];
} sb_peer_t;

/* Finds the server's binary in $PATH (or /usr/bin, /usr/sbin) and starts
 * it in a fresh directory under parent; false with a reason when it is not
 * installed or will not start. fsync: Redis fsyncs its append-only file at
 * every write (NATS 2.9 has no such setting; its JetStream syncs on its
 * own interval). */
bool sb_peer_start(sb_target_t target, const char *parent, bool fsync, sb_peer_t *out, char *why,
                   size_t why_len);
void sb_peer_stop(sb_peer_t *p);

/* Prepares the streams (JetStream streams, Redis keys) and runs the plan's
 * actors with the peer's protocol; same samples and counts as the others. */
void sb_peer_run(sb_run_t *run, const sb_peer_t *peer);

#endif
