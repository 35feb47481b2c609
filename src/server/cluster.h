/* The metadata consensus group in sluiced (cluster mode; docs/cluster.md).
 *
 * The host of one sl_vsr_replica_t (src/vsr) for SL_VSR_GROUP_METADATA, on
 * the io_uring loop thread:
 *
 *   replica plane thread --inbox (eventfd)--> sl_cluster_on_frames -> replica
 *   loop timer (10 ms timerfd) -------------> sl_cluster_on_timer -> replica tick
 *   admission (admit*.c) --------------------> sl_cluster_submit -> replica request
 *   replica bus.send --> the plane's outbox --> the peer's link
 *   replica bus.reply --> the session waiting with that client id --> its connection
 *   replica machine.apply --> sl_meta_apply with the single-node effects on partitions
 *
 * In cluster mode the single-node metadata store (meta/store.h) is not
 * opened: the replica's journal is the log, and its storage is
 * server/vsr_storage.h over <data_dir>/metadata/replica/. Single-node mode never creates any of this:
 * srv->cluster stays NULL and every path is as it was. */
#ifndef SL_SERVER_CLUSTER_H
#define SL_SERVER_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "wire/header.h"

struct sl_server;
struct sl_session;
struct sl_loop;

typedef struct sl_cluster sl_cluster_t;

/* What a session waits for (sl_session_t.vsr_wait). */
enum {
    SL_CLUSTER_WAIT_NONE = 0,
    SL_CLUSTER_WAIT_META,     /* a metadata operation: the reply goes out as the core made it */
    SL_CLUSTER_WAIT_REGISTER, /* a login: a committed reply binds the session */
    SL_CLUSTER_WAIT_LOGOUT,   /* a logout: a committed reply unbinds it */
    SL_CLUSTER_WAIT_PARTITION, /* a partition group's write (a send, an offset, a deletion) */
};

/* Ticks of the replica: the period of the loop's timer. */
#define SL_CLUSTER_TICK_MS 10u
/* How long the primary waits before it submits the root user again when
 * the first submission did not commit (a view change cut it). */
#define SL_CLUSTER_ROOT_RETRY_TICKS 300u

/* Checks that this data directory and configuration can run cluster mode,
 * starts the replica plane and opens the replica over an empty state
 * (srv->meta must exist and be empty; srv->partitions initialised). The
 * partitions are synced to the state the replica recovered. 0, or a
 * negative error with a message in err. */
SL_WUR int sl_cluster_open(struct sl_server *srv, char *err, size_t err_len);
/* After the loop is gone: the replica, the plane's thread, the timer. */
void sl_cluster_close(sl_cluster_t *c);

/* The loop's completion sources (server/loop.h events). */
int sl_cluster_inbox_fd(const sl_cluster_t *c);
int sl_cluster_timer_fd(const sl_cluster_t *c);
void sl_cluster_on_frames(void *srv, struct sl_loop *loop);
void sl_cluster_on_timer(void *srv, struct sl_loop *loop);

/* Hands an admitted request of s to the group; the answer comes back
 * through the replica's reply to s's connection (or is dropped when s has
 * closed). kind: SL_CLUSTER_WAIT_*; body: the admitted body (copied). A
 * Register passes session 0 and the verified user in user_id. */
void sl_cluster_submit(sl_cluster_t *c, struct sl_session *s, const sl_request_header_t *req,
                       uint8_t kind, uint8_t operation, uint32_t user_id, sl_span_t body);
/* A Logout for a client whose connection is gone (request u64::MAX): no
 * one waits for its answer. */
void sl_cluster_submit_disconnect(sl_cluster_t *c, sl_u128_t client, uint64_t session,
                                  uint32_t user_id);

/* SendMessages in cluster mode (messages.c did the admission): the record
 * goes to the partition's group; s is answered once it commits (the
 * SendMessages reply), or with the core's 57/58, or with 4036 when the
 * record is larger than a cluster takes. */
void sl_cluster_send_messages(sl_cluster_t *c, struct sl_session *s,
                              const sl_request_header_t *req, uint32_t stream_id,
                              uint32_t topic_id, uint32_t partition_id, sl_span_t record);

/* A consumer offset stored or deleted through the partition's group. */
typedef struct sl_cluster_offset_op {
    uint32_t stream_id, topic_id, partition_id;
    int kind; /* sl_offsets_kind_t */
    uint32_t id;
    uint64_t offset;
    bool remove;          /* DeleteConsumerOffset */
    bool never_backwards; /* poll auto-commit */
    bool wait;            /* answer s after the commit */
    bool answer_now;      /* NoAck: answer s at once (58 off the primary) */
} sl_cluster_offset_op_t;
void sl_cluster_store_offset(sl_cluster_t *c, struct sl_session *s, const sl_request_header_t *req,
                             const sl_cluster_offset_op_t *op);
/* DeleteSegments in cluster mode (admit_meta.c decoded nothing yet): resolved
 * and checked here, then, on the partition's primary only (58 elsewhere), the
 * deletion of the sealed segments below the end of the requested ones goes
 * through the partition's group; s is answered after the commit, result-framed
 * under operation 68 as the metadata path answers. */
void sl_cluster_delete_segments(sl_cluster_t *c, struct sl_session *s,
                                const sl_request_header_t *req, sl_span_t body);
/* The segment cleaner in cluster mode: each partition group this node leads
 * submits what retention would delete at now_us; backups delete nothing on
 * their own. */
void sl_cluster_pgroups_retention(sl_cluster_t *c, uint64_t now_us);
/* Replica-plane frames dropped for a partition group this node lacks. */
uint64_t sl_cluster_pframes_unknown(const sl_cluster_t *c);
/* May this node serve polls of the partition? false while its replica is out
 * of the partition's group (a lost disk, a state transfer needed or under
 * way) or a checkpoint interval behind the group's commit: polls then get
 * 58 (docs/compatibility.md), never a stale view. */
bool sl_cluster_partition_current(sl_cluster_t *c, uint32_t stream_id, uint32_t topic_id,
                                  uint32_t partition_id);

/* True, with the view in *view, while this node is the metadata group's
 * primary in a normal view. */
bool sl_cluster_primary_view(const sl_cluster_t *c, uint32_t *view);

/* True once this node has applied the group's first operation (the root
 * user's creation): before that it holds no users, and a login is answered
 * 58 (try again) rather than "invalid credentials". */
bool sl_cluster_ready(const sl_cluster_t *c);

/* One roster node as GetClusterMetadata reports it. */
typedef struct sl_cluster_node_view {
    uint32_t index; /* in cfg.cluster.nodes */
    bool leader;    /* the primary of the view this node is in, when that view is normal */
    bool reachable; /* this node, or its replica link is up */
} sl_cluster_node_view_t;
/* Fills out[i] for every roster node (in roster order); returns the count. */
uint32_t sl_cluster_nodes(const sl_cluster_t *c, sl_cluster_node_view_t *out, uint32_t max);

#endif
