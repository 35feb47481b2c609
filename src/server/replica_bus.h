/* The replica plane's transport (shared/protocol/cluster.md 1 and 4): one
 * TCP connection per pair of replicas, the lower id dialing the higher, the
 * keyed handshake of cluster.md 4 before anything else, reconnection with
 * backoff, a bounded send queue per link, and every received frame decoded
 * by the consensus core's codec (vsr/frame.h) before it is handed on.
 *
 * It is a poll(2) loop of its own, not a door of the io_uring loop
 * (server/loop.h): that loop accepts client connections and answers each
 * frame in lockstep, while a replica link is dialed as often as accepted,
 * carries frames either way unsolicited and needs its own timers. Replica
 * traffic is a few frames per metadata operation, so a poll loop over at
 * most 2 x 15 sockets costs nothing measurable, and single-node mode never
 * creates it. docs/cluster.md says how it is run (its own thread in sluiced).
 *
 * Threads. A bus belongs to the thread that calls sl_rbus_poll; every
 * function here must be called on that thread, and the callbacks run there.
 *
 * Hostile input. Until a link has passed the handshake it may only carry
 * 256-byte handshake headers: a larger size closes it before anything is
 * allocated. After it, a frame above frame_max closes the link before its
 * body is read; a frame the codec refuses (bad seal, bad field), one of
 * another cluster, one that claims another sender (but a Prepare or
 * RepairPrepare, which names the primary that built it and is relayed down
 * the chain), a handshake frame, or a
 * Request/Reply/Eviction closes the link with a logged reason. */
#ifndef SL_SERVER_REPLICA_BUS_H
#define SL_SERVER_REPLICA_BUS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "vsr/frame.h"

/* Replicas of one cluster (the roster's cap, server/config.h). */
#define SL_RBUS_REPLICAS_MAX 16u
/* Connections accepted but not yet past their handshake; more are closed on
 * accept, so a port scan cannot hold memory. */
#define SL_RBUS_PENDING_MAX 8u
/* Defaults of the bus's own timing and queue (sl_rbus_config_init). */
#define SL_RBUS_QUEUE_MAX_DEFAULT    256u  /* message_bus.peer_queue_capacity */
#define SL_RBUS_HANDSHAKE_TIMEOUT_MS 5000u /* connect to link up */
#define SL_RBUS_BACKOFF_MIN_MS       100u
#define SL_RBUS_BACKOFF_MAX_MS       5000u
/* Frames read from one link per sl_rbus_poll: fairness between peers. */
#define SL_RBUS_FRAMES_PER_POLL 64u

typedef struct sl_rbus sl_rbus_t;

typedef struct sl_rbus_addr {
    char host[INET6_ADDRSTRLEN]; /* numeric */
    uint16_t port;
} sl_rbus_addr_t;

typedef struct sl_rbus_config {
    uint8_t self;          /* this replica's id */
    uint8_t replica_count; /* ids are 0 .. replica_count - 1 */
    sl_rbus_addr_t listen; /* port 0: any free port (tests; see sl_rbus_port) */
    /* Where each replica's replica plane listens, by id (self's is unused). */
    sl_rbus_addr_t peers[SL_RBUS_REPLICAS_MAX];
    sl_u128_t cluster; /* sl_vsr_cluster_id(cluster name) */
    bool auth;
    uint8_t key[32]; /* sl_vsr_auth_key(shared secret) */
    bool has_previous_key;
    uint8_t previous_key[32]; /* the retiring secret's key, during a rotation */
    uint32_t frame_max;       /* largest frame, header included */
    uint32_t queue_max;       /* frames queued per link; beyond it sends are dropped */
    uint32_t handshake_timeout_ms;
    uint32_t backoff_min_ms; /* first redial delay, doubled up to backoff_max_ms */
    uint32_t backoff_max_ms;
    /* A decoded frame from replica `peer`. frame and its body borrow bytes
     * that are valid only during the call. Optional. */
    void (*on_frame)(void *ctx, uint8_t peer, const sl_vsr_frame_t *frame, const uint8_t *bytes,
                     uint32_t len);
    /* The link to `peer` came up (handshake done) or went down. Optional. */
    void (*on_link)(void *ctx, uint8_t peer, bool up);
    /* How many more frames on_frame can take now (backpressure). Asked once
     * per sl_rbus_poll; while it is 0 no established link is read, so the
     * peers' bytes wait in the kernel's socket buffers (and TCP's flow
     * control holds the senders) instead of being read and dropped; a turn
     * hands on_frame at most that many. Optional: NULL takes everything. */
    uint32_t (*room)(void *ctx);
    void *ctx;
    /* An eventfd another thread writes to end the wait of sl_rbus_poll
     * early (it has frames for the bus to send); -1: none. The bus reads it
     * empty. */
    int wake_fd;
} sl_rbus_config_t;

typedef struct sl_rbus_stats {
    uint64_t links_established; /* handshakes completed, as dialer or acceptor */
    uint64_t links_lost;        /* established links closed */
    uint64_t dials;             /* connection attempts */
    uint64_t refused;           /* handshakes refused, by us or by the peer */
    uint64_t bad_frames;        /* links closed for a frame that broke a rule */
    uint64_t frames_in;
    uint64_t frames_out;
    uint64_t dropped;      /* sends refused: no link, or its queue full */
    uint64_t dropped_full; /* of those, for a full queue (or no memory) */
    uint64_t paused;       /* turns in which room() said 0: links left unread */
    uint32_t links_up;
} sl_rbus_stats_t;

/* Defaults for everything but the addresses, ids, cluster and keys. */
void sl_rbus_config_init(sl_rbus_config_t *cfg);

/* Binds the listening socket. Returns 0 or -errno (the address is logged). */
SL_WUR int sl_rbus_create(const sl_rbus_config_t *cfg, sl_rbus_t **out);
/* Closes every link (on_link down for those up) and frees everything. */
void sl_rbus_destroy(sl_rbus_t *bus);
/* One turn: dials what is due, waits at most timeout_ms for sockets, reads,
 * writes, runs the handshakes and timers, calls the callbacks. */
void sl_rbus_poll(sl_rbus_t *bus, int timeout_ms);

/* The bus's frame buffers: every frame it queues or reads lives in one, with
 * a reference count kept in front of the bytes. A prepare a backup received
 * can so be relayed down the chain by the loop (the plane's sender holds a
 * reference) while the loop still reads it (it holds another): no copy of a
 * megabyte on the backup's way to its journal write. The count is atomic:
 * the loop thread and the plane's thread drop their references apart.
 * sl_rbus_frame_alloc returns a buffer with one reference (NULL when out of
 * memory); the last release frees it; NULL is released as nothing. */
uint8_t *sl_rbus_frame_alloc(uint32_t len);
void sl_rbus_frame_ref(uint8_t *frame);
void sl_rbus_frame_release(uint8_t *frame);

/* Queues a copy of one whole frame for replica `peer`. 0; -ENOTCONN when no
 * link to it is up, -ENOBUFS when its queue is full (the frame is dropped:
 * consensus retransmits, cluster.md 8), -EINVAL for a bad peer or length. */
SL_WUR int sl_rbus_send(sl_rbus_t *bus, uint8_t peer, const uint8_t *frame, uint32_t len);
/* sl_rbus_send of a frame buffer (sl_rbus_frame_alloc) whose reference the
 * bus takes (and releases, also on an error): a megabyte prepare is queued
 * without a copy. */
SL_WUR int sl_rbus_send_owned(sl_rbus_t *bus, uint8_t peer, uint8_t *frame, uint32_t len);
/* Inside on_frame only: the frame being handed (bytes), a frame buffer
 * whose reference the caller now holds and releases
 * (sl_rbus_frame_release), so it can keep it without a copy. NULL
 * for a header-only frame (its bytes stay the bus's) or outside on_frame. */
uint8_t *sl_rbus_take_frame(sl_rbus_t *bus);

/* The listening port (the chosen one when cfg.listen.port was 0). */
uint16_t sl_rbus_port(const sl_rbus_t *bus);
/* Sets where replica `peer` listens (tests that learn ports late). */
void sl_rbus_set_peer(sl_rbus_t *bus, uint8_t peer, const sl_rbus_addr_t *addr);
void sl_rbus_stats(const sl_rbus_t *bus, sl_rbus_stats_t *out);
bool sl_rbus_link_up(const sl_rbus_t *bus, uint8_t peer);

#endif
