/* Internal to server/cluster*.c: the host's state and what its files share. */
#ifndef SL_SERVER_CLUSTER_INTERNAL_H
#define SL_SERVER_CLUSTER_INTERNAL_H

#include "server/cluster.h"
#include "server/cluster_snapshot.h"
#include "server/replica_plane.h"
#include "server/server.h"
#include "server/vsr_storage.h"
#include "vsr/replica.h"

/* Forwards a primary has submitted for a backup and not yet answered. */
#define SL_CLUSTER_FORWARDS_MAX 256u
/* How long a backup waits for a ForwardRegisterResult / ForwardLogoutResult
 * before its client gets 58 (and re-issues); and how long a primary keeps a
 * forward it has not answered. */
#define SL_CLUSTER_FORWARD_TIMEOUT_TICKS 500u

/* The largest metadata body admitted to the group. The biggest real ones
 * are a CreateUser or UpdatePermissions with a permission map per stream and
 * topic, far below this; a larger one is refused at admission (InvalidFormat)
 * so the journal's slots stay 1 MiB (1024 of them: a 1 GiB sparse ring). */
#define SL_CLUSTER_META_BODY_MAX (1024u * 1024u - 4096u)
/* The largest prepare the metadata group journals: the header and the
 * largest body and the replica's 8-byte journal seal (vsr_storage.h adds
 * its slot header). */
#define SL_CLUSTER_PREPARE_MAX (SL_HEADER_SIZE + SL_CLUSTER_META_BODY_MAX + 8u)

/* Partition groups (cluster_partition.c, docs/cluster.md "Messages"). The
 * prepare queue is partition.prepare_queue_depth's default (defaults.md);
 * the ring holds a checkpoint interval and two pipelines with room to spare
 * (sl_vsr_config_check), and its slots the largest batch record a cluster
 * accepts: 2 MiB - 4 KiB, so a 1 MB batch of 1 KB messages fits and a
 * slot is 2 MiB. A larger SendMessages is refused with 4036. */
#define SL_CLUSTER_PARTITION_PIPELINE     32u
#define SL_CLUSTER_PARTITION_SLOTS        256u
#define SL_CLUSTER_PARTITION_CHECKPOINT   128u
#define SL_CLUSTER_PARTITION_REPAIR_CHUNK 16u
#define SL_CLUSTER_SEND_RECORD_MAX        (2u * 1024u * 1024u - 4096u)
#define SL_CLUSTER_PARTITION_PREPARE_MAX  (SL_HEADER_SIZE + SL_CLUSTER_SEND_RECORD_MAX + 8u)
/* SL_CLUSTER_DELETES_SEEN, the clients whose DeleteSegments a partition
 * replica remembers: server/cluster_snapshot.h, whose record holds them. */

typedef struct sl_pgroup sl_pgroup_t;

typedef struct sl_cluster_forward {
    bool used;
    uint8_t kind; /* SL_CLUSTER_WAIT_REGISTER or _LOGOUT */
    uint8_t peer; /* the backup that forwarded it */
    sl_u128_t client;
    sl_u128_t nonce;
    uint64_t tick;
} sl_cluster_forward_t;

struct sl_cluster {
    sl_server_t *srv;
    sl_replica_plane_t *plane;
    sl_vsr_storage_dir_t *store; /* <data_dir>/metadata/replica/ */
    sl_vsr_replica_t *replica;
    sl_vsr_config_t vcfg;
    int timer_fd;
    /* While the replica opens, applies leave the partitions alone: one
     * sync after the open brings them in line with whatever it recovered. */
    bool booting;
    /* The metadata journal's head at open: an op at or below it may have
     * been applied before a restart, and is applied again without clearing
     * partition directories. */
    uint64_t replay_until;
    uint64_t ticks;
    uint64_t root_tick; /* ticks at the last root submission (0: none yet) */
    sl_cluster_forward_t forwards[SL_CLUSTER_FORWARDS_MAX]; /* as the primary */
    uint64_t nonce_next; /* forwards of this node: nonces never 0, never reused */
    /* Partition groups, sorted by group id (cluster_partition.c). */
    sl_pgroup_t **pgroups;
    uint32_t pgroups_count, pgroups_cap;
    uint64_t pframes_unknown; /* frames for a group this node does not have */
};

/* cluster.c */
/* Delivers the storage's journal completions: after every replica call. */
void sl_cluster_complete_writes(sl_cluster_t *c);

/* The session waiting for a reply to client (request number from a Reply
 * frame), or NULL. */
sl_session_t *sl_cluster_waiting_session(const sl_cluster_t *c, sl_u128_t client,
                                         const uint8_t *frame);

/* cluster_partition.c */
/* Opens the groups of partitions the registry gained (formatting them
 * unless boot: at boot a partition without consensus state is a lost
 * disk), closes those of partitions it lost. After every sync of the
 * partitions. */
void sl_cluster_pgroups_sync(sl_cluster_t *c, bool boot);
void sl_cluster_pgroups_close(sl_cluster_t *c);
sl_pgroup_t *sl_cluster_pgroup(sl_cluster_t *c, uint64_t group);
/* A replica-plane frame of a partition group: to its replica, or dropped
 * and counted when this node has no such group. */
void sl_cluster_pgroup_frame(sl_cluster_t *c, uint64_t group, const uint8_t *frame, uint32_t len);
/* Every group's tick; the metadata primary also takes the groups over. */
void sl_cluster_pgroups_tick(sl_cluster_t *c, bool metadata_primary);
/* On each partition group this node leads: submits the purge op of a purge
 * the metadata committed and the group's log does not hold yet (also on
 * every tick, so a new primary finishes an old one's). */
void sl_cluster_pgroups_purge_due(sl_cluster_t *c);

/* cluster_forward.c */
/* A backup's login or logout goes to the primary (cluster.md 10). */
void sl_cluster_forward_out(sl_cluster_t *c, sl_session_t *s, uint8_t kind);
/* A Forward frame (26..29) from peer. */
void sl_cluster_forward_in(sl_cluster_t *c, uint8_t peer, const uint8_t *frame, uint32_t len);
/* The replica answered client and no session of this node waits for it:
 * true when it was a forward (the backup is told), false otherwise. */
bool sl_cluster_forward_reply(sl_cluster_t *c, sl_u128_t client, const uint8_t *frame,
                              uint32_t size);
/* Each tick: forwards that waited too long. */
void sl_cluster_forward_tick(sl_cluster_t *c);
/* A forwarded Logout of a client whose connection is gone. */
void sl_cluster_forward_disconnect(sl_cluster_t *c, sl_u128_t client, uint64_t session);

#endif
