/* sluiced's replica plane in cluster mode: the transport of
 * server/replica_bus.h built from the [cluster] settings and run on a
 * thread of its own. Single-node mode never starts it.
 *
 * Two bounded queues join it to the io_uring loop thread, where the
 * consensus replica lives (server/cluster.h). Inbound: every decoded frame
 * goes into a queue of SL_PLANE_INBOX_MAX frames (a frame with a body by
 * pointer, in the buffer the bus read it into) and the plane's eventfd is
 * written; the loop reads that eventfd (a completion source, as the hash
 * pool's) and drains the queue. Outbound: the loop queues a copy of each
 * frame per peer (at most SL_PLANE_OUTBOX_MAX waiting in all) and wakes the
 * plane's poll through a second eventfd; the plane hands those copies to
 * the bus's per-link queues. A full inbox is not a drop: the plane stops
 * reading its links until the loop has drained some (the bus's room
 * callback), so the peers' frames wait in the sockets and TCP's flow
 * control holds the senders. A full outbox or link queue drops the frame:
 * consensus resends what matters (cluster.md 8). Link states are mirrored in atomics
 * the loop thread reads (GetClusterMetadata's status). */
#ifndef SL_SERVER_REPLICA_PLANE_H
#define SL_SERVER_REPLICA_PLANE_H

#include <stdbool.h>
#include <stdint.h>

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

/* Frames waiting between the two threads, each way. */
#define SL_PLANE_INBOX_MAX  1024u
#define SL_PLANE_OUTBOX_MAX 1024u

/* --- the loop thread's side ---------------------------------------------------------- */

/* The eventfd the loop reads: written whenever the inbox gains frames. */
int sl_replica_plane_event_fd(const sl_replica_plane_t *plane);
/* Hands every frame in the inbox, oldest first, to fn (bytes borrowed for
 * the call), at most SL_PLANE_INBOX_MAX per call. Returns how many. */
uint32_t sl_replica_plane_drain(sl_replica_plane_t *plane,
                                void (*fn)(void *ctx, uint8_t peer, const uint8_t *frame,
                                           uint32_t len),
                                void *ctx);
/* Queues a copy of frame for replica peer; dropped when the outbox is full
 * or out of memory (counted). */
void sl_replica_plane_send(sl_replica_plane_t *plane, uint8_t peer, const uint8_t *frame,
                           uint32_t len);
/* Whether the link to peer has passed its handshake (as of the plane's
 * last report). */
bool sl_replica_plane_link_up(const sl_replica_plane_t *plane, uint8_t peer);

#endif
