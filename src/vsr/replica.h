/* One replica of one consensus group: Viewstamped Replication as
 * shared/protocol/cluster.md lays it out, written as a deterministic state
 * machine (shared/DESIGN.md, "The consensus layer's shape").
 *
 * In: frames from other replicas (sl_vsr_replica_on_frame), client requests
 * already admitted by the host (sl_vsr_replica_request), ticks
 * (sl_vsr_replica_tick) and journal write completions
 * (sl_vsr_replica_write_done). Out, through three small interfaces the host
 * provides: frames to send (bus), journal and state writes (storage), and
 * committed operations to apply (machine). Nothing inside reads a clock,
 * opens a socket, starts a thread or draws randomness: the host passes time
 * as ticks plus a wall-clock sample for prepare timestamps, and entropy as
 * a seed for nonces. The same inputs in the same order give the same
 * outputs, which is what lets tests/sim replay a seed exactly.
 *
 * One core serves every group: a replica object is one group's replica
 * (cfg.group, packed as cluster.md 5); a server runs one per group and
 * routes frames by their `group` field.
 *
 * Calls into the interfaces happen synchronously from inside the replica's
 * entry points; an interface must not call back into the same replica
 * except through the documented completion (write_done), and not from
 * inside the interface call itself. */
#ifndef SL_VSR_REPLICA_H
#define SL_VSR_REPLICA_H

#include <stdbool.h>
#include <stdint.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "vsr/frame.h"

#define SL_VSR_REPLICAS_MAX 16u

/* --- the three interfaces ------------------------------------------------------------ */

/* Durable storage of one replica of one group.
 *
 * The journal is a ring of cfg.journal_slots prepares: op X lives in slot
 * X % journal_slots. write_prepare is asynchronous: the host copies the
 * bytes before returning and later calls sl_vsr_replica_write_done(slot)
 * once they are durable. read_prepare returns what the slot holds, as of
 * the latest write submitted (a page cache's view), or an empty span for a
 * slot never written; the span is borrowed until the next storage call. A
 * slot may come back torn or corrupted: the replica verifies every read.
 * The bytes are the replica's own format, opaque to the host: a prepare
 * frame stamped with the view it was journaled in, then an 8-byte seal
 * over all of it.
 *
 * The state record (view, log view, checkpoint, the view's headers) and the
 * checkpoint artifacts are written synchronously and whole: write_state
 * returns once the record is durable, and a crash leaves either the old or
 * the new record. write_artifacts stores the snapshot and client table of a
 * checkpoint; the previous checkpoint's artifacts must stay readable until
 * a state record naming the new one has been written. Each returns 0 or a
 * negative error (the replica then stops making progress on that path and
 * retries later). */
/* install's answer while the host still verifies what was staged. */
#define SL_VSR_INSTALL_PENDING 1

typedef struct sl_vsr_storage {
    void *ctx;
    void (*write_prepare)(void *ctx, uint32_t slot, const uint8_t *frame, uint32_t size);
    sl_span_t (*read_prepare)(void *ctx, uint32_t slot);
    int (*write_state)(void *ctx, sl_span_t record);
    sl_span_t (*read_state)(void *ctx); /* empty: no record (a fresh or wiped disk) */
    int (*write_artifacts)(void *ctx, uint64_t op, sl_span_t snapshot, sl_span_t client_table);
    /* kind: SL_VSR_ARTIFACT_METADATA_SNAPSHOT or _CLIENT_TABLE; empty when absent */
    sl_span_t (*read_artifact)(void *ctx, uint64_t op, uint8_t kind);

    /* State transfer of a host's own list of artifacts (cluster.md 9: a
     * partition's SEGMENT_LOG per retained segment and CONSUMER_OFFSETS).
     * All four set, or all NULL: then the two artifacts write_artifacts
     * stores are what a transfer moves, pulled into memory (the metadata
     * group, whose wire bytes this leaves as they were).
     *
     * offer: the artifacts of this replica's checkpoint at op (the one its
     * state record names), as manifest entries in *list (host memory, valid
     * until the next offer) and *count (at most SL_VSR_MANIFEST_ENTRIES_MAX).
     * What is offered must stay servable as offered (a length sealed at
     * offer time, whatever the host appends since) for as long as the host
     * keeps the offer. 0, or a negative error (answered as a transient
     * refusal).
     * serve: up to len bytes of artifact `index` of the offer made at op,
     * from offset; an empty span when that offer is no longer kept or the
     * bytes cannot be read (the requester then starts over). Borrowed until
     * the next storage call.
     * stage: the bytes of artifact `index` (entry *a of the manifest) of a
     * transfer of the checkpoint at op, at offset. Each transfer begins with
     * a call with a == NULL (drop whatever an earlier one staged); then the
     * artifacts arrive in manifest order (empty ones skipped), each from
     * offset 0, chunk after chunk. When one is complete (offset + bytes.len == a->len) the
     * host verifies it whole (its length and XXH3-64, a->checksum), then or
     * later, off the caller's thread (the host's install waits for it). 0, or
     * a negative error (the transfer starts over, from another peer).
     * install: every artifact of the manifest is staged; once the host has
     * verified them all, it replaces its state with theirs, so that a crash
     * at any point leaves either the old state or the new one, and appends
     * to snapshot the machine snapshot of checkpoint op (machine.restore's
     * input). 0; SL_VSR_INSTALL_PENDING while the host is still verifying
     * what was staged (nothing changed: the replica calls install again, the
     * same way, at each tick, and keeps the transfer); or a negative error
     * (a staged artifact did not verify, or the install failed: the old
     * state is kept; the transfer starts over). */
    int (*offer)(void *ctx, uint64_t op, const sl_vsr_artifact_t **list, uint32_t *count);
    sl_span_t (*serve)(void *ctx, uint64_t op, uint32_t index, uint64_t offset, uint32_t len);
    int (*stage)(void *ctx, uint64_t op, uint32_t index, const sl_vsr_artifact_t *a,
                 uint64_t offset, sl_span_t bytes);
    int (*install)(void *ctx, uint64_t op, const sl_vsr_artifact_t *list, uint32_t count,
                   sl_buf_t *snapshot);
} sl_vsr_storage_t;

/* The network: frames to other replicas of the group and replies to
 * clients. Both copy the frame before returning; delivery is best effort
 * (the protocol resends what matters). */
typedef struct sl_vsr_bus {
    void *ctx;
    void (*send)(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size);
    void (*reply)(void *ctx, sl_u128_t client, const uint8_t *frame, uint32_t size);
    /* Optional (NULL: none): one line on each protocol event worth a log
     * line (view changes, installed logs, state transfers, recoveries). */
    void (*trace)(void *ctx, const char *line);
} sl_vsr_bus_t;

/* The replicated state machine (the metadata machine, a partition, or the
 * simulator's test machine). apply is deterministic: the same prepares in
 * the same order give the same state and the same reply bytes; it appends
 * the reply body (for Register too: the login payload, result-framed).
 * snapshot appends the whole state; restore replaces the state with a
 * snapshot's (0, or -1 when the bytes do not decode, state then empty);
 * reset empties it. */
typedef struct sl_vsr_machine {
    void *ctx;
    void (*apply)(void *ctx, const sl_vsr_prepare_t *prepare, sl_span_t body, sl_buf_t *reply);
    void (*snapshot)(void *ctx, sl_buf_t *out);
    int (*restore)(void *ctx, sl_span_t snapshot);
    void (*reset)(void *ctx);
    /* The two hooks below are optional (NULL: none; the metadata group
     * leaves them so). They let a machine whose prepares depend on the state
     * before them (a partition stamps each batch with its base offset) build
     * and check that dependency.
     *
     * head, for op p->op: the body of op p->op - 1 when that op is not
     * applied yet (in the pipeline, read back from the journal), or an empty
     * span (ptr NULL) when op p->op - 1 is applied (the machine's own state
     * is the head).
     *
     * prepare: primary only. Builds the body journaled for op p->op from the
     * request body (p's header fields are final: op, timestamp, operation,
     * client, user_id). Returns 0 with the body appended to out, or a status
     * code > 0 (errors.md) that the core sends to the client as an error
     * reply (not cached); nothing is prepared then. A primary that cannot
     * read its head's body yet (being repaired) answers 57 instead of
     * calling it. */
    uint32_t (*prepare)(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body,
                        sl_buf_t *out);
    /* accept: backup only. May this replica journal prepare p (body) as op
     * p->op? Asked for a Prepare and for a RepairPrepare alike (a refusal
     * must not turn into an acknowledgement through repair). Not called
     * when op p->op - 1's body is neither applied nor present, or present
     * but not the prepare p chains to (a gap being repaired: the hash chain
     * vouches for p). false: the prepare is dropped, never journaled nor
     * acknowledged, counted in sl_vsr_info_t.prepares_refused and traced. */
    bool (*accept)(void *ctx, const sl_vsr_prepare_t *p, sl_span_t head, sl_span_t body);
} sl_vsr_machine_t;

/* --- configuration ------------------------------------------------------------------------- */

/* Deliberate bugs for tests/sim's "is the simulator blind?" test. Never set
 * outside tests. */
enum {
    SL_VSR_BUG_COMMIT_WITHOUT_QUORUM = 1u << 0, /* the primary commits on its own write */
    SL_VSR_BUG_NACK_WITHOUT_QUORUM = 1u << 1,   /* a view change truncates on one nack */
    SL_VSR_BUG_CANONICAL_BY_OP = 1u << 2,       /* the longest log wins, not the newest view */
    SL_VSR_BUG_HEAD_APPLIED = 1u << 3,          /* the hooks' head is the applied state, always */
};

typedef struct sl_vsr_config {
    sl_u128_t cluster;            /* cluster id (sl_vsr_cluster_id) */
    uint64_t group;               /* cluster.md 5 */
    uint8_t replica;              /* this replica's index, < replica_count */
    uint8_t replica_count;        /* 1..SL_VSR_REPLICAS_MAX */
    uint32_t pipeline_max;        /* prepares in flight, 1..127 (metadata.prepare_queue_depth) */
    uint32_t journal_slots;       /* ring size; > checkpoint_interval + 2 * pipeline_max */
    uint32_t checkpoint_interval; /* ops between checkpoints (all replicas alike) */
    uint32_t clients_max;         /* client-table entries */
    uint32_t reply_max;           /* largest reply body the client table keeps */
    uint32_t repair_chunk_max;    /* prepares per RequestPrepares (cluster.repair_chunk_max) */
    uint32_t state_chunk_max;     /* bytes per StateChunk */
    uint32_t state_max;           /* largest artifact accepted in a state transfer */
    uint32_t frame_max;           /* message_bus.max_message_size */
    /* time, in ticks */
    uint32_t commit_interval_ticks;     /* Commit heartbeat period (primary) */
    uint32_t heartbeat_timeout_ticks;   /* a backup declares the primary dead */
    uint32_t view_change_timeout_ticks; /* a view change gives up and tries the next view */
    uint32_t resend_ticks;              /* resend prepares, votes and requests */
    uint64_t nonce_seed;                /* entropy from the host: nonces and incarnations */
    uint32_t bugs;                      /* SL_VSR_BUG_*: tests only */
    /* The partition plane (cluster.md 6.1: "client: the server's
     * per-connection id"): a request needs no Register. No client-table
     * lookup, no eviction for a missing session, no reply cache (no
     * duplicate detection: delivery is at-least-once, messages.md 3.4);
     * Register and Logout requests are refused (dropped, counted in
     * sl_vsr_info_t.requests_refused). Still one request in flight per
     * client (57), 58 on a non-primary, the pipeline bound. The client table
     * stays empty; checkpoints carry it empty. */
    bool sessionless;
    /* The journal's writes do not flush (a partition group of a topic
     * without enforce_fsync). A backup whose next replica's PrepareOk no
     * commit waits for (the last of three) then relays a prepare down the
     * chain after its own journal write, not in front of its PrepareOk. A
     * write that flushes would hold that relay for a disk's fsync, so with
     * flushed writes every backup relays first. */
    bool late_relay;
} sl_vsr_config_t;

/* Defaults for a group of replica_count replicas (the metadata group's
 * values of cluster.md 11 where it names one, at 10 ms per tick). */
void sl_vsr_config_defaults(sl_vsr_config_t *cfg, uint8_t replica, uint8_t replica_count);
/* 0, or -1 when a value is out of range (why names it). */
SL_WUR int sl_vsr_config_check(const sl_vsr_config_t *cfg, const char **why);

/* --- life cycle ---------------------------------------------------------------------------- */

typedef struct sl_vsr_replica sl_vsr_replica_t;

/* Writes the first state record of a new replica (view 0, nothing
 * committed). A replica whose storage has no record is treated as one whose
 * disk was lost: it rejoins without voting until it has learned the view
 * from a quorum and installed a StartView (see docs/architecture.md). */
SL_WUR int sl_vsr_replica_format(const sl_vsr_config_t *cfg, const sl_vsr_storage_t *storage);

/* Opens a replica over its storage: reads the state record, restores the
 * checkpoint (a corrupt one means state transfer), scans the journal and
 * rebuilds the log. 0, or -1 (out of memory, bad config, a record of another
 * cluster or group). The interfaces are copied; their ctx must outlive the
 * replica. */
SL_WUR int sl_vsr_replica_open(const sl_vsr_config_t *cfg, const sl_vsr_storage_t *storage,
                               const sl_vsr_bus_t *bus, const sl_vsr_machine_t *machine,
                               sl_vsr_replica_t **out);
void sl_vsr_replica_close(sl_vsr_replica_t *r);

/* --- inputs ------------------------------------------------------------------------------------
 */

/* One tick of time; realtime_us is the host's wall clock, used only to
 * stamp prepares (strictly increasing regardless). */
void sl_vsr_replica_tick(sl_vsr_replica_t *r, uint64_t realtime_us);
/* One frame from the replica plane (any command 6..29 of this group). The
 * frame is decoded and verified here; bad frames are dropped and counted. */
void sl_vsr_replica_on_frame(sl_vsr_replica_t *r, const uint8_t *frame, size_t len);
/* The journal write to slot is durable (ok), or failed (the slot is then
 * treated as faulty and repaired). */
void sl_vsr_replica_write_done(sl_vsr_replica_t *r, uint32_t slot, bool ok);
/* The journal's writes start or stop flushing (a topic's enforce_fsync
 * changed): sl_vsr_config_t.late_relay from the next prepare on. */
void sl_vsr_replica_set_late_relay(sl_vsr_replica_t *r, bool late);

/* A client request the host has admitted (framing.md 3; body validated,
 * user_id stamped). The replica answers through bus->reply: a committed
 * Reply, a cached reply, a transient result (57, 58, 59) or an Eviction
 * (1, 7, 12), or nothing (framing.md 6.1's silent drops). */
typedef struct sl_vsr_request {
    sl_u128_t client;
    uint64_t session;
    uint64_t request;
    sl_u128_t request_checksum;
    uint8_t operation;
    uint32_t user_id;
    uint64_t timestamp; /* the client's, echoed on denials */
    sl_span_t body;
} sl_vsr_request_t;
void sl_vsr_replica_request(sl_vsr_replica_t *r, const sl_vsr_request_t *req);

/* Starts a view change to the lowest view above the current one whose
 * primary is this replica. A no-op when this replica is already the primary
 * of its view (normal, or a view change towards it under way), or while it
 * is recovering, wiped or syncing (it could not lead). The host calls it to
 * bring a group's primary to a chosen node; safety is the view change's, as
 * for any view number: this only picks the number. */
void sl_vsr_replica_take_over(sl_vsr_replica_t *r);

/* --- observation
 * ---------------------------------------------------------------------------------- */

typedef enum sl_vsr_status {
    SL_VSR_STATUS_NORMAL = 0,
    SL_VSR_STATUS_VIEW_CHANGE,
    SL_VSR_STATUS_RECOVERING, /* restarted with an uncertain head, or a lost disk */
} sl_vsr_status_t;

typedef struct sl_vsr_info {
    sl_vsr_status_t status;
    bool primary; /* normal and the primary of its view */
    bool syncing; /* needs (or runs) a state transfer */
    bool wiped;   /* started from a lost disk and has not rejoined yet */
    uint32_t view;
    uint32_t log_view;
    uint64_t op;
    uint64_t commit_min; /* applied */
    uint64_t commit_max; /* known committed */
    uint64_t checkpoint_op;
    uint64_t frames_dropped;   /* frames that failed decoding or the group/cluster check */
    uint8_t primary_index;     /* the current view's primary: view % replica_count */
    uint64_t prepares_refused; /* prepares the machine's accept hook refused */
    uint64_t requests_refused; /* sessionless: Register / Logout requests dropped */
} sl_vsr_info_t;

void sl_vsr_replica_info(const sl_vsr_replica_t *r, sl_vsr_info_t *out);

/* What a replica holds for one op (diagnostics: the simulator prints these
 * when a seed fails). */
typedef struct sl_vsr_entry_info {
    bool known;     /* a header for op in the log window */
    bool canonical; /* known to be the current view's prepare */
    bool present;   /* its body is durably in the journal */
    uint8_t slot;   /* 0 empty, 1 valid, 2 faulty: the journal slot's content */
    uint64_t slot_op;
    sl_u128_t identity;
} sl_vsr_entry_info_t;
void sl_vsr_replica_entry(sl_vsr_replica_t *r, uint64_t op, sl_vsr_entry_info_t *out);
const char *sl_vsr_status_name(sl_vsr_status_t s);

#endif
