/* The replica's state and the helpers its source files share:
 * replica.c (life cycle, recovery, the state record, journal I/O, dispatch),
 * replica_normal.c (requests, prepares, commits, apply, checkpoints),
 * replica_view.c (view change), replica_repair.c (repair, state transfer,
 * rejoining after a lost disk). Nothing outside src/vsr includes this. */
#ifndef SL_VSR_REPLICA_INTERNAL_H
#define SL_VSR_REPLICA_INTERNAL_H

#include "vsr/client_table.h"
#include "vsr/replica.h"

/* What a journal slot durably holds, as far as this replica knows: the
 * content of the last completed write, or what the scan at open found.
 * Corruption at rest is only discovered on read (the slot then turns
 * faulty). */
enum { SLOT_EMPTY = 0, SLOT_VALID, SLOT_FAULTY };

/* A journal slot holds a prepare frame followed by this many bytes of seal
 * (XXH3-64 of the frame, view stamp included). */
#define VSR_JOURNAL_SEAL 8u

typedef struct vsr_slot {
    uint8_t state;
    bool writing; /* a write is in flight: no second one is issued */
    uint64_t op;  /* SLOT_VALID: the prepare durably there */
    sl_u128_t identity;
    uint32_t view; /* the view it was journaled in (this replica's, then normal) */
    uint64_t writing_op;
    sl_u128_t writing_identity;
    uint32_t writing_view;
    /* The prepare being written goes on down the chain once the write is
     * done (vsr_relay_first said it may wait). */
    bool relay_after_write;
} vsr_slot_t;

/* One position of the log (op % journal_slots): the header this replica
 * holds for op, and whether it is known to be the current view's prepare
 * there ("canonical"). A header only: the body lives in the journal. */
typedef struct vsr_entry {
    uint64_t op; /* 0: no header known at this position */
    bool canonical;
    sl_u128_t identity;
    sl_u128_t parent;
    uint64_t timestamp;
    uint32_t acks;      /* primary: replicas that acknowledged it in this view */
    uint64_t sent_tick; /* primary: when it last went out */
    uint8_t header[SL_HEADER_SIZE];
} vsr_entry_t;

/* A DoViewChange the new primary holds, per sender. */
typedef struct vsr_dvc {
    bool have;
    uint64_t op;
    uint64_t commit;
    uint32_t log_view;
    sl_u128_t nack;
    sl_u128_t present;
    uint32_t count;
    uint8_t *headers; /* count entries, entry i is op - i */
} vsr_dvc_t;

/* A state transfer being pulled (cluster.md 9): one artifact, one chunk in
 * flight at a time. */
typedef struct vsr_sync {
    bool active;
    uint8_t peer;
    sl_u128_t nonce;
    uint64_t tick; /* when the last request went out */
    bool have_target;
    uint64_t commit_op;
    sl_u128_t identity; /* of the prepare at commit_op, from the offer */
    uint32_t count;
    sl_vsr_artifact_t artifacts[2]; /* snapshot, client table */
    uint32_t artifact;              /* the one being fetched */
    sl_buf_t data[2];
    /* The host's artifacts (storage.offer and the rest set): the manifest's
     * entries, and the bytes of the current one staged so far. */
    sl_vsr_artifact_t *list;
    uint32_t list_cap;
    uint64_t staged;
    /* Every artifact staged; the host's install answered pending: it is
     * called again at each tick. */
    bool installing;
    /* Moves on after each attempt that brought nothing; its own counter, so
     * the peers asked do not fall in step with repair's. */
    uint32_t rotation;
} vsr_sync_t;

struct sl_vsr_replica {
    sl_vsr_config_t cfg;
    sl_vsr_storage_t storage;
    sl_vsr_bus_t bus;
    sl_vsr_machine_t machine;
    uint32_t quorum;

    sl_vsr_status_t status;
    bool wiped;   /* started without a state record: rejoining */
    bool syncing; /* the committed prefix must come by state transfer */
    uint32_t view;
    uint32_t log_view; /* the view whose log this replica holds */
    uint64_t op;       /* highest op with a known header */
    uint64_t commit_min;
    uint64_t commit_max;
    uint64_t checkpoint_op;
    sl_vsr_artifact_t checkpoint[2]; /* this replica's checkpoint artifacts */
    sl_u128_t checkpoint_identity;   /* the prepare at checkpoint_op (0: unknown) */
    uint64_t nack_floor;             /* never nack an op at or below this (lost disk) */
    uint32_t dvc_view;               /* highest view a DoViewChange went out for (a promise) */
    uint32_t view_max;               /* highest view ever persisted (view may go back, this not) */

    vsr_entry_t *log;  /* journal_slots */
    vsr_slot_t *slots; /* journal_slots */
    /* The headers of log_view's start (the StartView suffix), kept in the
     * state record: after a restart they tell which journaled prepares
     * belong to log_view's log. */
    uint8_t *view_headers;
    uint32_t view_headers_count;
    uint64_t view_headers_op;

    uint64_t ticks;
    uint64_t realtime_us;
    uint64_t timestamp_last; /* primary: last prepare timestamp */

    /* primary */
    uint64_t heartbeat_seq;
    uint64_t heartbeat_tick;
    uint64_t progress_tick; /* last time the pipeline committed or was empty */
    /* Per backup: until this tick new prepares also go straight to it,
     * because a resend found the chain not reaching it (0: chain only). */
    uint64_t star_until[SL_VSR_REPLICAS_MAX];
    /* backup: last sign of life from the primary */
    uint64_t primary_tick;
    uint64_t primary_heartbeat;
    uint64_t rsv_tick; /* last RequestStartView sent while normal */
    /* The primary's Commit names the identity of its commit op: an anchor
     * for the hash chain where this replica has no canonical header. */
    uint64_t anchor_op;
    sl_u128_t anchor_identity;

    /* view change */
    uint32_t svc_votes; /* bitmask of replicas, self included */
    bool dvc_sent;
    uint64_t view_change_tick; /* when this view change began */
    uint64_t resend_tick;
    vsr_dvc_t dvcs[SL_VSR_REPLICAS_MAX];

    /* recovering */
    sl_u128_t incarnation;
    uint32_t view_at_open;
    uint32_t log_view_at_open;
    uint32_t view_floor;      /* lost disk: highest view a quorum reported */
    uint32_t discovery_votes; /* lost disk: replicas that reported */
    uint64_t recover_tick;
    uint32_t recover_rounds; /* lost disk: RequestStartViews without an answer */

    /* repair */
    bool repair_busy;
    sl_u128_t repair_nonce;
    uint8_t repair_peer;
    uint64_t repair_tick;
    uint64_t repair_from;
    uint64_t repair_to;
    uint32_t repair_rotation;
    uint32_t repair_accepted; /* RepairPrepares taken since the last request */

    vsr_sync_t sync;
    sl_vsr_clients_t clients;

    sl_buf_t out;   /* frames being built */
    sl_buf_t body;  /* suffix bodies, the primary's prepare frames */
    sl_buf_t reply; /* apply output */
    sl_buf_t state; /* the state record, snapshots */
    /* The last two prepares journaled, as written (journal seal included),
     * the newer in kept[kept_new]. The next prepare's head and the op the
     * primary applies are nearly always the last one; a backup learns that
     * op N - 1 committed from prepare N, so it applies the one before the
     * last. Reading either back from the journal cost a copy of up to a
     * slot, a system call and a hash per prepare. Rotated with `out` at
     * each journal write, so keeping them copies nothing. */
    sl_buf_t kept[2];
    uint64_t kept_op[2]; /* 0: holds nothing */
    sl_u128_t kept_identity[2];
    uint32_t kept_new;
    uint64_t journal_writes; /* prepares handed to the journal */
    uint64_t nonce_counter;
    uint64_t frames_dropped;
    uint64_t prepares_refused;
    uint64_t requests_refused;
};

/* A backup the chain failed to reach gets new prepares straight from the
 * primary for this many resend periods; then the chain alone is tried again
 * (a chain still broken costs one resend wait per such period, not one per
 * prepare). */
#define VSR_STAR_RESENDS 20u

/* --- helpers (replica.c) ----------------------------------------------------------------- */

static inline uint8_t vsr_primary_of(const sl_vsr_replica_t *r, uint32_t view)
{
    return (uint8_t)(view % r->cfg.replica_count);
}
static inline bool vsr_is_primary(const sl_vsr_replica_t *r)
{
    return r->status == SL_VSR_STATUS_NORMAL && vsr_primary_of(r, r->view) == r->cfg.replica;
}
static inline vsr_entry_t *vsr_entry(sl_vsr_replica_t *r, uint64_t op)
{
    return &r->log[op % r->cfg.journal_slots];
}
static inline vsr_slot_t *vsr_slot(sl_vsr_replica_t *r, uint64_t op)
{
    return &r->slots[op % r->cfg.journal_slots];
}
/* The log is a window of the ring anchored at the checkpoint: the ops
 * [checkpoint_op, checkpoint_op + journal_slots). The journal never holds an
 * op beyond it (vsr_journal_write refuses), so after a restart every op the
 * replica still has to apply is in its journal; an op beyond the window has
 * no place yet (its slot is an uncheckpointed op's), and an entry left over
 * from before the checkpoint is not "known" whatever it holds. */
static inline bool vsr_in_window(const sl_vsr_replica_t *r, uint64_t op)
{
    return op != 0 && op >= r->checkpoint_op && op < r->checkpoint_op + r->cfg.journal_slots;
}
static inline bool vsr_known(sl_vsr_replica_t *r, uint64_t op)
{
    return vsr_in_window(r, op) && vsr_entry(r, op)->op == op;
}
/* The body of op's header is durably in the journal. */
bool vsr_present(sl_vsr_replica_t *r, uint64_t op);

sl_u128_t vsr_nonce(sl_vsr_replica_t *r);
/* A line for bus.trace, when the host asked for one. */
void vsr_trace(sl_vsr_replica_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Encodes f with body and sends it to one replica / all others. */
void vsr_send(sl_vsr_replica_t *r, uint8_t to, sl_vsr_frame_t *f, sl_span_t body);
void vsr_send_bytes(sl_vsr_replica_t *r, uint8_t to, const uint8_t *frame, size_t len);
void vsr_broadcast(sl_vsr_replica_t *r, sl_vsr_frame_t *f, sl_span_t body);
/* A frame with the common fields of this replica filled in. */
void vsr_frame_init(sl_vsr_replica_t *r, sl_vsr_frame_t *f, uint8_t command);

/* Writes the state record; false when storage refused (nothing that needs
 * it may go out then). */
bool vsr_persist(sl_vsr_replica_t *r);

/* Sets / clears the log entry of a header's op (one outside the window is
 * not set). */
void vsr_log_set(sl_vsr_replica_t *r, const uint8_t header[SL_HEADER_SIZE], bool canonical);
void vsr_log_clear(sl_vsr_replica_t *r, uint64_t op);
/* Writes a verified prepare (header + body) to the journal under this
 * replica's current view; skipped while the slot has a write in flight or
 * when op is outside the window. */
void vsr_journal_write(sl_vsr_replica_t *r, const uint8_t header[SL_HEADER_SIZE], sl_span_t body);
/* The same for a whole prepare frame built in `frame` (the primary's own):
 * sealed in place and kept, with no copy; `frame` gets another buffer. */
void vsr_journal_write_frame(sl_vsr_replica_t *r, sl_buf_t *frame);
/* Reads op's prepare and checks it is the one the log names; a slot that
 * fails turns faulty. */
bool vsr_journal_read(sl_vsr_replica_t *r, uint64_t op, sl_vsr_frame_t *f);
/* The prepare this replica's journal slot for op holds, read back and
 * verified against the slot's record, whether or not its log has a header
 * for op (a state transfer forgets the log above the checkpoint it
 * installs, not the journal); *header is its journaled header. */
bool vsr_journal_read_slot(sl_vsr_replica_t *r, uint64_t op, sl_vsr_frame_t *f,
                           const uint8_t **header);
/* Marks the entries below `from` canonical while they chain from it, down
 * to commit_min + 1. strict: entries below a break lose the mark (after a
 * new log was installed above them); otherwise the walk stops at the first
 * break and leaves the rest as they were (a repair filled one entry in). */
void vsr_chain_down(sl_vsr_replica_t *r, uint64_t from, bool strict);

/* The head for op's prepare hooks (sl_vsr_machine_t): an empty span when
 * op - 1 is applied; else op - 1's body from the journal, when it is present
 * and is the prepare whose identity is parent (zero parent: any). false
 * when neither (f holds the read: the span borrows storage until the next
 * storage call). */
bool vsr_head(sl_vsr_replica_t *r, uint64_t op, sl_u128_t parent, sl_vsr_frame_t *f,
              sl_span_t *head);
/* Asks the machine's accept hook about prepare f (a backup journaling a
 * body it did not build); true when there is no hook or no head to judge
 * by. A refusal is counted and traced. */
bool vsr_accept(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);

/* --- replica_normal.c ------------------------------------------------------------------------ */

void vsr_on_prepare(sl_vsr_replica_t *r, const sl_vsr_frame_t *f, const uint8_t *raw);
void vsr_on_prepare_ok(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_commit(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_written(sl_vsr_replica_t *r, uint64_t op);
/* Whether a backup relays a prepare down the chain before its own journal
 * write (the next replica's PrepareOk is one a commit may wait for) or after
 * it (replica_normal.c says why). */
bool vsr_relay_first(const sl_vsr_replica_t *r);
/* The relay after the write: the kept bytes of op's prepare to the next
 * replica of the chain, when there is one and they are still kept. */
void vsr_relay_kept(sl_vsr_replica_t *r, uint64_t op, sl_u128_t identity);
void vsr_send_prepare_ok(sl_vsr_replica_t *r, uint64_t op);
void vsr_commit_advance(sl_vsr_replica_t *r);
void vsr_apply_committed(sl_vsr_replica_t *r);
void vsr_tick_normal(sl_vsr_replica_t *r);
/* Sets commit_max from a source of the current log view. */
void vsr_commit_learn(sl_vsr_replica_t *r, uint64_t commit);
bool vsr_checkpoint(sl_vsr_replica_t *r);

/* --- replica_view.c ------------------------------------------------------------------------ */

void vsr_start_view_change(sl_vsr_replica_t *r, uint32_t view);
void vsr_on_start_view_change(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_do_view_change(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_start_view(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_request_start_view(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_send_start_view(sl_vsr_replica_t *r, uint8_t to, sl_u128_t incarnation);
/* Asks a replica for its StartView (rate-limited by resend_ticks). */
void vsr_request_start_view(sl_vsr_replica_t *r, uint8_t to);
void vsr_tick_view_change(sl_vsr_replica_t *r);
void vsr_tick_recovering(sl_vsr_replica_t *r);

/* --- replica_repair.c ------------------------------------------------------------------------- */

void vsr_on_request_prepares(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_repair_prepare(sl_vsr_replica_t *r, const sl_vsr_frame_t *f, const uint8_t *raw);
void vsr_on_repair_end(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_tick_repair(sl_vsr_replica_t *r);
void vsr_on_request_state(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_state_target(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_request_chunk(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_on_state_chunk(sl_vsr_replica_t *r, const sl_vsr_frame_t *f);
void vsr_tick_sync(sl_vsr_replica_t *r);
/* The storage moves a host list of artifacts (storage.offer and the rest set). */
static inline bool vsr_host_artifacts(const sl_vsr_replica_t *r)
{
    return r->storage.offer != NULL;
}
/* A replica that lost its disk asks every peer for its view (and state). */
void vsr_discovery_send(sl_vsr_replica_t *r);

#endif
