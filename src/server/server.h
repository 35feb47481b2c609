/* The sluiced server: one shard owning the metadata state machine and every
 * connection (docs/architecture.md explains why issue 3 runs one shard and
 * where the shard boundaries are). Internal to src/server.
 *
 * Request path (framing.md 9, DESIGN "one pipeline"):
 *   loop on_frame -> dispatch.c gate (header verdict, checksum, session
 *   rules) -> reads.c (operation 2) or admit.c (metadata: decode, validate,
 *   hash, preflight) -> sl_meta_store_commit (journal + fdatasync + apply)
 *   -> reply.c. In cluster mode admission hands the request to the
 *   metadata group's replica instead (cluster.h), which answers after a
 *   quorum commit.
 *
 * Threads: everything here runs on the loop thread, except the Argon2id
 * work of logins, CreateUser and ChangePassword, which admission hands to
 * the hash pool (hash_pool.h) and resumes when the result is back
 * (admit_hash.c): the journal commit and apply stay on the loop thread. */
#ifndef SL_SERVER_SERVER_H
#define SL_SERVER_SERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "auth/secret.h"
#include "base/arena.h"
#include "base/bytes.h"
#include "meta/state.h"
#include "meta/store.h"
#include "server/cluster.h"
#include "server/config.h"
#include "server/hash_pool.h"
#include "server/http.h"
#include "server/work_pool.h"
#include "server/loop.h"
#include "server/metrics.h"
#include "server/otel.h"
#include "server/partitions.h"
#include "server/segment_create.h"
#include "server/sysinfo.h"
#include "server/tls.h"
#include "server/ws.h"
#include "wire/header.h"

/* The server build version (login replies, GetStats); set by CMake. */
#ifdef SLUICE_VERSION
#define SL_SERVER_VERSION SLUICE_VERSION
#else
#define SL_SERVER_VERSION "0.1.0"
#endif

/* Free heap bytes that make the tick hand heap pages back (malloc_trim) once
 * they grew this much since the last trim: a few large replies' worth, so a
 * quiet server trims rarely and one after a flood at most once a second. */
#define SL_HEAP_TRIM_STEP (4u * 1024u * 1024u)

typedef struct sl_server sl_server_t;

/* One connection's session (lifecycle.md). */
typedef struct sl_session {
    sl_server_t *server;
    sl_conn_t *conn;
    uint32_t id;    /* the connection number GetClient(s) report */
    uint32_t index; /* position in server->sessions */
    bool bound;     /* logged in: client/epoch/user are set */
    /* An internal connection of the HTTP door (http.h): trusted to bind to
     * a user without a password, never listed as a client, never timed
     * out for want of a login. */
    bool internal;
    sl_u128_t client;
    uint64_t epoch;
    uint32_t user_id;
    uint64_t user_created_at; /* the user's incarnation: ids are reused */
    uint32_t protocol_version;
    char sdk_name[256];
    char sdk_version[256];
    uint64_t last_seen_us; /* monotonic: any accepted request refreshes it */
    /* metrics.h: the slot of the request being answered and when its frame
     * was delivered (monotonic). */
    uint16_t metric_slot;
    uint64_t metric_start_us;
    /* otel.h: the request's span while it is in flight (when sampled). */
    sl_otel_span_t span;
    /* An eviction waiting for the reply being written (stale clients). */
    uint8_t evict_after_reply;
    sl_u128_t evict_client;
    /* The reply being written: header and body stay valid until on_sent. */
    uint8_t reply_header[SL_HEADER_SIZE];
    sl_buf_t reply_body;
    /* Scratch for one request (list replies); reset per request. */
    sl_arena_t arena;
    /* The request waiting for the hash pool, NULL when none: its job (whose
     * owner is this session until on_close cancels it), a copy of its
     * header, and its body, which lies in the delivered frame the loop
     * keeps until the request is answered or the connection closes. */
    sl_hash_job_t *hash_job;
    sl_request_header_t hash_req;
    sl_span_t hash_body;
    /* A GetSnapshot being built on the worker pool (background.c), NULL when
     * none; on_close clears the job's owner. */
    struct sl_snapshot_job *snapshot_job;
    /* The login state the connection's limits were last set for
     * (sl_session_sync_login), and since when it has been without a login
     * (monotonic; tcp.login_timeout counts from there). */
    bool limits_bound;
    uint64_t unbound_since_us;
    /* reply_budget.c: bytes of reply_body counted against
     * message_bus.reply_memory_max, and a poll waiting for them: a copy of
     * its header and its body, which lies in the delivered frame the loop
     * keeps until the poll is answered or the connection closes. */
    size_t reply_charge;
    bool poll_parked;
    sl_request_header_t parked_req;
    sl_span_t parked_body;
    struct sl_session *parked_next;
    /* Cluster mode (cluster.h): the request handed to the metadata group
     * and waiting for its answer (SL_CLUSTER_WAIT_*; 0 when none), a copy
     * of its header, the user a waiting login verified, and the raw token
     * of a CreatePersonalAccessToken (only this node knows it). */
    uint8_t vsr_wait;
    sl_request_header_t vsr_req;
    uint32_t vsr_user_id;
    char vsr_token[SL_TOKEN_TEXT_MAX];
    /* A login or logout forwarded to the primary (cluster.md 10): its
     * nonce (0: not forwarded) and the tick it went out at. */
    sl_u128_t vsr_nonce;
    uint64_t vsr_tick;
    /* Request numbers of the partition writes nobody waits for (NoAck
     * offsets, poll auto-commit), each under a client id of its own. */
    uint64_t vsr_async_request;
} sl_session_t;

/* A SendMessages to an enforce_fsync partition, journaled at the end of the
 * loop turn together with the other sends of that turn to the same
 * partition: one write and one fdatasync for all of them (group commit).
 * The session's connection waits in lockstep until the reply. */
typedef struct sl_staged_send {
    sl_session_t *session;
    sl_request_header_t req; /* decoded before the frame moved */
    sl_partition_t *partition;
    uint8_t *frame; /* owned (from frame_pool) until the partition takes it */
    uint8_t *record;
    size_t len;
    uint32_t stream_id, topic_id, partition_id;
} sl_staged_send_t;

struct sl_http;

struct sl_server {
    sl_config_t cfg;
    int listen_fd; /* bound before the data directory is touched; -1 when none */
    /* The HTTP door (http.h): its listener is bound with the TCP one, its
     * threads start after the loop is created. NULL when http.enabled is
     * false. http_port is the port it serves (the ephemeral one for 0). */
    struct sl_http *http;
    int http_listen_fd; /* bound, not yet handed to the door; -1 otherwise */
    uint16_t http_port;
    sl_http_tls_t http_tls; /* http.tls.enabled: the PEM texts the door serves */
    uint32_t internal_count; /* sessions that are internal */
    int lock_fd;   /* the data directory's owner lock (datadir.h); -1 when not held */
    sl_loop_t *loop;
    sl_tls_ctx_t *tcp_tls; /* tcp.tls.enabled: the TCP door's TLS context */
    /* The WebSocket door (ws.h): bound with the TCP listener, served by the
     * same loop. ws_listen_fd is -1 when websocket.enabled is false;
     * ws_port is the port it serves (the ephemeral one for 0). */
    int ws_listen_fd;
    uint16_t ws_port;
    sl_ws_door_t ws_door;
    sl_tls_ctx_t *ws_tls; /* websocket.tls.enabled: WSS */
    bool io_uring_failed; /* sl_server_open failed creating the ring (exit 77) */
    /* Request-frame buffers: the loop takes them, partitions and
     * messages.c give them back. Outlives the loop and the partitions. */
    sl_frame_pool_t *frame_pool;
    /* system.encryption.enabled: the loop thread's AES-256-GCM context
     * (server/encryption.h); NULL when off, and then nothing costs. */
    struct sl_aead *aead;
    struct sl_aead *meta_aead; /* the metadata store's (journal, snapshot) */
    /* The plaintext tail (server/tail_cache.h): NULL when encryption is off or
     * system.encryption.tail_cache_max is 0; tail_notes is sealing's scratch for it. */
    struct sl_tail_cache *tail_cache;
    struct sl_sealed_note *tail_notes;
    uint32_t tail_notes_cap;
    sl_meta_t *meta;
    sl_meta_store_t *store;
    sl_sysinfo_t sysinfo;
    sl_metrics_t metrics;       /* loop thread (metrics.h) */
    sl_otel_t *otel;            /* OpenTelemetry export; NULL when off (otel.h) */
    sl_partitions_t partitions; /* every partition of meta, open */
    uint64_t last_timestamp;    /* of the last journaled entry */
    uint64_t last_message_ts;   /* of the last appended batch: strictly increasing */
    uint64_t last_retention_us; /* monotonic time of the last cleaner pass */
    uint64_t heap_free_base;    /* free heap bytes after the last trim, or fewer since */
    uint64_t start_us;
    uint32_t frame_max;
    /* Every open connection, for GetClients and the heartbeat verifier. */
    sl_session_t **sessions;
    uint32_t sessions_count;
    uint32_t sessions_cap;
    /* Sends waiting for this turn's group commit (sl_messages_commit_staged),
     * with scratch arrays of the same capacity. */
    sl_staged_send_t *staged;
    sl_partition_batch_t *staged_batches;
    uint64_t *staged_bases;
    uint32_t *staged_picks;
    uint32_t staged_count;
    uint32_t staged_cap;
    /* Admission scratch: the body being journaled. */
    sl_buf_t admitted;
    /* Send scratch: the batch checksum's input sl_batch_validate_keep
     * gathered for the send being appended (messages.c). */
    sl_buf_t batch_sums;
    /* Argon2id off the loop thread. */
    sl_hash_pool_t *hash_pool;
    /* Other blocking work off the loop thread (background.c): the trash, snapshots. */
    sl_work_pool_t *work_pool;
    /* Partitions' first segments created on a ring of their own (segment_create.h); NULL in
     * cluster mode, or when its ring could not be set up (created on the loop then). */
    sl_segment_creator_t *segment_creator;
    /* reply_budget.c: bytes of reply buffers counted now, the polls waiting
     * for them (oldest first) and the one being resumed. */
    uint64_t reply_held;
    sl_session_t *parked_head;
    sl_session_t *parked_tail;
    uint32_t parked_count;
    sl_session_t *resuming;
    bool reply_released; /* bytes came back (or the line moved) since the last resume */
    /* Consumer-group members the journal restored at boot, whose connections
     * died with the previous process (server.c, orphans_release): released
     * on the first tick past 6/5 of the heartbeat interval after boot unless
     * a connection logged in again under that client id. */
    sl_u128_t *orphans;
    uint32_t orphans_count;
    uint64_t orphans_since_us; /* monotonic */
    /* Cluster mode: the view in which this node, as the metadata primary,
     * noted the members with no session here (server.c,
     * cluster_orphans_tick); orphans_noted false: none noted. */
    uint32_t orphans_view;
    bool orphans_noted;
    volatile int stop_signal; /* the signal that asked us to stop, for the log */
    /* Cluster mode: the metadata group's host (cluster.h); NULL in
     * single-node mode, where store is the metadata's log instead. */
    sl_cluster_t *cluster;
};

/* Binds the listener, then locks the data directory, recovers the metadata,
 * creates the root user on first boot, and sets up the loop on the bound
 * socket. err gets a message for the log; after a failure io_uring_failed
 * tells whether the ring was what failed. sl_server_close in either case. */
int sl_server_open(sl_server_t *srv, const sl_config_t *cfg, char *err, size_t err_len) SL_WUR;
/* Serves until sl_server_stop; returns 0 or -errno of the ring. */
int sl_server_run(sl_server_t *srv) SL_WUR;
/* Async-signal-safe. */
void sl_server_stop(sl_server_t *srv);
void sl_server_close(sl_server_t *srv);

/* --- used across the server's files ----------------------------------------- */

/* dispatch.c: the loop's on_frame. */
void sl_dispatch_frame(void *ctx, sl_conn_t *conn, const uint8_t *frame, uint32_t size);

/* reply.c: every answer goes through these (each one counts the request in
 * srv->metrics). */
/* A request's answer of frame_bytes left (0 for a drop); error when it was
 * a refusal. */
void sl_reply_account(sl_session_t *s, size_t frame_bytes, bool error);
void sl_reply_status(sl_session_t *s, const sl_request_header_t *req, uint32_t status);
/* Sends the session's reply_body with the given reply operation; op/commit
 * and timestamp as framing.md 7 describes for non-replicated replies. */
void sl_reply_body(sl_session_t *s, const sl_request_header_t *req, uint8_t operation);
/* A committed metadata reply: header op/commit/timestamp of the prepare. */
void sl_reply_committed(sl_session_t *s, const sl_request_header_t *req, uint8_t operation,
                        uint64_t op, uint64_t timestamp, sl_span_t body);
/* Cluster mode: a reply the metadata replica built (h decoded from its
 * frame), sent with body; the header is encoded again, so the bytes are
 * the replica's but for a body the host changed (a token appended). */
void sl_reply_frame(sl_session_t *s, const sl_reply_header_t *h, sl_span_t body);
/* A result-framed rejection that was not committed (57, 58, 59, 51). */
void sl_reply_result(sl_session_t *s, const sl_request_header_t *req, uint8_t operation,
                     uint32_t code);
/* Eviction: session-terminal; the connection stays open (the SDKs log in
 * again on it) unless close is set. */
void sl_reply_evict(sl_session_t *s, sl_u128_t client, uint8_t reason, bool close);
/* No reply at all (the reference drops the frame). */
void sl_reply_drop(sl_session_t *s);
/* The request's answer is written (on_sent), will never be (on_close), or
 * there is none: its span, if sampled, ends (otel.h). */
void sl_reply_span_end(sl_session_t *s);

/* messages.c: SendMessages and the consumer-offset writes (160..162). The
 * frame is passed so SendMessages can hand it to the partition. */
void sl_messages_partition_op(sl_session_t *s, const sl_request_header_t *req, const uint8_t *frame,
                              sl_span_t body);
/* Journals every staged send (one append_many, so one fdatasync, per
 * partition) and answers each; a no-op when nothing is staged. Runs at the
 * end of each loop turn and before any request that could observe or
 * change a partition (polls, offsets, metadata, logout), so a staged batch
 * is never visible before it is durable and never outlives its partition. */
void sl_messages_commit_staged(sl_server_t *srv);
/* The stream an entry's body names first, resolved in meta before the entry commits
 * (UINT32_MAX when it names none that exists): what the after-commit sync is scoped to. */
uint32_t sl_server_commit_stream(const sl_server_t *srv, const sl_meta_entry_t *e);
/* After a committed metadata operation: bring the partitions in line
 * (create, delete, purge, delete segments), for stream_id only when it is
 * not UINT32_MAX. reply is its result body. */
void sl_server_after_commit(sl_server_t *srv, const sl_meta_entry_t *e, uint32_t stream_id,
                            sl_span_t reply);

/* internal.c: the internal-only commands of HTTP's connections (internal.h). */
void sl_internal_handle(sl_session_t *s, const sl_request_header_t *req, sl_span_t body);

/* reads.c: operation 2 commands after the gate. */
void sl_reads_handle(sl_session_t *s, const sl_request_header_t *req, sl_span_t body);

/* admit.c: metadata operations after the gate; login and logout. */
void sl_admit_metadata(sl_session_t *s, const sl_request_header_t *req, sl_span_t body);
void sl_admit_register(sl_session_t *s, const sl_request_header_t *req, sl_span_t body);
void sl_admit_logout(sl_session_t *s, const sl_request_header_t *req);
/* A bound connection went away: commit a Logout for it (lifecycle.md 7). */
void sl_admit_disconnect(sl_session_t *s);
/* False (and the session ended, as on a disconnect) when the session's user
 * no longer exists (deleted, maybe with its id reused by a new user) or was
 * set inactive (the reference keeps such sessions bound; Sluice does not).
 * True otherwise. */
bool sl_admit_user_current(sl_session_t *s);
/* The hash pool finished the job of s's waiting login or metadata request:
 * take it up where admission left it (the frame is still delivered). */
void sl_admit_register_resume(sl_session_t *s, const sl_hash_job_t *job);
/* Cluster mode: the group committed the Register s waited for (session
 * epoch): bind s as a single-node login does. */
void sl_admit_register_done(sl_session_t *s, sl_u128_t client, uint64_t epoch);
/* Cluster mode, on a backup: the primary committed the Register this node
 * forwarded for s (session epoch): bind s and send the login reply. */
void sl_admit_register_forwarded(sl_session_t *s, uint64_t epoch);
/* An internal session (HTTP) binds to user_id without a password: the same
 * Register commit a login makes. created_at, when not 0, must be the
 * user's (a token of a deleted user does not pass for a new one with its
 * id). The user must be active. Answers like a login: the login reply, or
 * status 40. */
void sl_admit_register_internal(sl_session_t *s, const sl_request_header_t *req, uint32_t user_id,
                                uint64_t created_at);
void sl_admit_metadata_resume(sl_session_t *s, const sl_hash_job_t *job);

/* background.c: work on the worker pool. */
typedef struct sl_snapshot_job sl_snapshot_job_t;
/* The partitions' discard hook: removes a tree in the trash on a worker. */
void sl_background_discard(void *ctx, const char *path);
/* Builds the GetSnapshot archive of req on a worker and answers req when it is done; the
 * inputs are copied. 0 or -SL_ERR_SNAPSHOT_FILE_COMPLETION_FAILED (out of memory). */
int sl_background_snapshot(sl_session_t *s, const sl_request_header_t *req, uint8_t compression,
                           sl_span_t types, sl_span_t config_text) SL_WUR;
/* The connection closes: a job still running is dropped when it comes back. */
void sl_background_cancel(sl_session_t *s);
/* The loop's completion source for the worker pool. */
void sl_background_on_event(void *ctx, sl_loop_t *loop);

/* admit_hash.c: requests waiting for the hash pool. */
/* Hands job (inputs filled) to the pool for the request being admitted on
 * s; the request is answered when it comes back. 0, or -EAGAIN when the
 * pool's queue is full (the job is freed; the caller answers 58). */
int sl_hashing_submit(sl_session_t *s, const sl_request_header_t *req, sl_span_t body,
                      sl_hash_job_t *job) SL_WUR;
/* A job that checks password against u's stored hash (u NULL: the dummy). */
sl_hash_job_t *sl_hashing_verify_job(const sl_meta_user_t *u, sl_span_t password);
/* True when u's stored hash is still the one job verified against (both
 * absent counts): else the verdict is stale and must be computed again. */
bool sl_hashing_same_hash(const sl_hash_job_t *job, const sl_meta_user_t *u);
/* The loop's on_event: resumes the requests whose jobs are done. */
void sl_hashing_on_event(void *ctx, sl_loop_t *loop);
/* on_close: the connection's waiting request, if any, will get no reply. */
void sl_hashing_cancel(sl_session_t *s);

/* server.c: the connection's frame limit and login clock follow the
 * session's login state: SL_UNAUTH_FRAME_MAX and a running clock without a
 * login, max_message_size with one. Called when the state may have moved
 * (after each reply, on a rebind that unbinds another session, each tick). */
void sl_session_sync_login(sl_session_t *s);

/* server.c: whether a stamp `since_us` is more than limit_us old at now_us:
 * a connection without a login since then has overstayed tcp.login_timeout,
 * a bound session last seen then has missed its heartbeats. A stamp later
 * than now_us is not overdue: the tick reads now_us once and then stamps
 * sessions (sl_session_sync_login; requests the HTTP door dispatches in
 * sl_http_tick), later. */
bool sl_session_overdue(uint64_t since_us, uint64_t now_us, uint64_t limit_us);

/* reply_budget.c: the bytes held by replies until they are written, across
 * the server (message_bus.reply_memory_max; docs/configuration.md,
 * "Memory"). A session's reply buffer counts at its capacity once that is
 * above SL_REPLY_UNCOUNTED, whether a reply in it is being written or it is
 * kept for the next one. */
#define SL_REPLY_UNCOUNTED (16u * 1024u)
/* The most record bytes one poll reply carries, unless its first record alone is larger (it
 * is then served alone): the copy of one poll holds the loop thread about a millisecond, not
 * the 20-60 ms of a 61 MB reply (issue 10). A consumer polling more gets fewer messages, as
 * the protocol allows, and polls again. */
#define SL_POLL_REPLY_SLICE (2u * 1024u * 1024u)
/* The most body bytes s may put in its reply buffer now (at most want, at
 * least SL_REPLY_UNCOUNTED and what s already holds): what the budget has
 * left, after freeing buffers other sessions keep idle; only what s holds
 * while other polls wait, unless s is the one resumed. */
size_t sl_reply_budget_grant(sl_session_t *s, size_t want);
/* Brings s's count in line with its reply buffer's capacity. */
void sl_reply_budget_account(sl_session_t *s);
/* The poll being answered on s waits (unanswered, in lockstep) until
 * reply bytes are released; body must stay valid until it is resumed. */
void sl_reply_budget_park(sl_session_t *s, const sl_request_header_t *req, sl_span_t body);
/* A reply of s was written (on_sent): its buffer is freed when large or
 * wanted by a waiting poll, and waiting polls resume, oldest first. */
void sl_reply_budget_sent(sl_session_t *s);
/* s is closing (on_close): its buffer and its place in line are given up. */
void sl_reply_budget_close(sl_session_t *s);
/* Resumes waiting polls, oldest first, until one still does not fit. */
void sl_reply_budget_resume(sl_server_t *srv);
/* messages.c: runs the parked poll of s again, from its saved request. */
void sl_messages_poll_resume(sl_session_t *s);

/* Journals and applies one entry built by admission; the reply body is
 * appended to reply. Chooses op and timestamp. 0 or the commit's error. */
int sl_server_commit(sl_server_t *srv, sl_meta_entry_t *e, sl_buf_t *reply) SL_WUR;

#endif
