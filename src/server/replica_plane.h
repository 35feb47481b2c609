/* sluiced's replica plane in cluster mode: the transport of
 * server/replica_bus.h built from the [cluster] settings and run on a
 * thread of its own. Single-node mode never starts it.
 *
 * Today a decoded frame ends at a counter and a debug line: the consensus
 * core (src/vsr) is not wired to the server yet (docs/cluster.md). The
 * wiring will hand frames to the replica on the loop thread through a
 * bounded queue, as DESIGN.md asks of new work beside the loop. */
#ifndef SL_SERVER_REPLICA_PLANE_H
#define SL_SERVER_REPLICA_PLANE_H

#include "base/assert.h"
#include "server/config.h"

typedef struct sl_replica_plane sl_replica_plane_t;

/* Binds this node's ports.tcp_replica and starts the thread. cfg must be a
 * validated cluster configuration. 0, or a negative error with a message in
 * err. */
SL_WUR int sl_replica_plane_start(const sl_config_t *cfg, sl_replica_plane_t **out, char *err,
                                  size_t err_len);
/* Stops the thread (within one poll interval), closes every link, frees. */
void sl_replica_plane_stop(sl_replica_plane_t *plane);

#endif
