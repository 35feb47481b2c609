/* The sluiced process core: opening the data directory, recovering the
 * metadata, creating the root user on first boot, and the loop callbacks
 * that keep one session per connection. */
#include "server/server.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "base/io.h"
#include "base/log.h"
#include "server/datadir.h"
#include "server/encryption.h"
#include "server/http.h"
#include "server/test_faults.h"
#include "wire/cmd_system.h"
#include "wire/codec.h"

/* --- the state machine behind the store --------------------------------------- */

static int machine_apply(void *ctx, const sl_meta_entry_t *e, sl_buf_t *reply)
{
    sl_server_t *srv = ctx;
    return sl_meta_apply(srv->meta, e, reply);
}

/* With at-rest encryption the snapshot's state bytes are one sealed blob
 * (server/encryption.h); the store's own prefix (format, op) stays clear. */
static int machine_encode(void *ctx, sl_buf_t *out)
{
    sl_server_t *srv = ctx;
    if (!srv->aead)
        return sl_meta_encode(srv->meta, out);
    sl_buf_t plain;
    sl_buf_init(&plain, 0);
    int rc = sl_meta_encode(srv->meta, &plain);
    if (rc >= 0)
        rc = sl_buf_ok(&plain) ? sl_encryption_seal_blob(srv->aead,
                                                         sl_span_str(SL_ENCRYPTION_SNAPSHOT_AAD),
                                                         sl_buf_span(&plain), out)
                               : -SL_ERR_ERROR;
    explicit_bzero(plain.data, plain.cap);
    sl_buf_free(&plain);
    return rc;
}

static int machine_decode(void *ctx, sl_span_t bytes)
{
    sl_server_t *srv = ctx;
    if (!srv->aead)
        return sl_meta_decode(bytes, srv->meta);
    sl_buf_t plain;
    sl_buf_init(&plain, 0);
    int rc = sl_encryption_open_blob(srv->aead, sl_span_str(SL_ENCRYPTION_SNAPSHOT_AAD), bytes,
                                     &plain);
    if (rc == 0)
        rc = sl_meta_decode(sl_buf_span(&plain), srv->meta);
    else
        sl_log_error("metadata: the snapshot cannot be decrypted (a key that is not configured, "
                     "or the file was changed)");
    explicit_bzero(plain.data, plain.cap);
    sl_buf_free(&plain);
    return rc;
}

/* --- first boot: the root user (defaults.md 2) ---------------------------------- */

/* A generated root password is written to a file only the server's user can
 * read, never to the log: the log is kept in memory for GetSnapshot, which
 * a user with read_servers alone may take, and is often collected by
 * others (journald, container logs). The file comes before the commit, so
 * a crash between the two leaves no root user whose password is lost. */
static int save_generated_password(sl_server_t *srv, const char *password, char *path, char *err,
                                   size_t err_len)
{
    char text[SL_PASSWORD_LEN_MAX + 2];
    snprintf(text, sizeof(text), "%s\n", password);
    int rc =
        sl_datadir_write_private(srv->cfg.system.path, SL_DATADIR_ROOT_PASSWORD_FILE, text, path);
    memset(text, 0, sizeof(text));
    if (rc != 0) {
        snprintf(err, err_len, "cannot write the generated root password to %s/%s: %s",
                 srv->cfg.system.path, SL_DATADIR_ROOT_PASSWORD_FILE, strerror(-rc));
        return -SL_ERR_ERROR;
    }
    return 0;
}

static int commit_root(sl_server_t *srv, const char *username, const char *password, char *err,
                       size_t err_len)
{
    char phc[SL_PASSWORD_HASH_MAX];
    if (sl_password_hash(sl_span_str(password), phc) != 0) {
        snprintf(err, err_len, "cannot hash the root password");
        return -SL_ERR_ERROR;
    }
    sl_buf_t body, reply;
    sl_buf_init(&body, 0);
    sl_buf_init(&reply, 0);
    sl_meta_entry_t e;
    /* Op and timestamp are chosen by sl_server_commit like any entry's: the
     * timestamp, now, is the root user's created_at. */
    int rc = sl_meta_root_entry(&body, sl_span_str(username), sl_span_str(phc), 0, 0, &e);
    if (rc == 0)
        rc = sl_server_commit(srv, &e, &reply);
    sl_buf_free(&body);
    sl_buf_free(&reply);
    if (rc != 0)
        snprintf(err, err_len, "cannot create the root user: %s", sl_strerror(rc));
    return rc;
}

static int create_root(sl_server_t *srv, char *err, size_t err_len)
{
    const sl_config_t *cfg = &srv->cfg;
    const char *username = cfg->root.username[0] ? cfg->root.username : "iggy";
    if (cfg->root.password[0]) {
        int rc = commit_root(srv, username, cfg->root.password, err, err_len);
        if (rc == 0)
            sl_log_info("created the root user '%s' with the configured password", username);
        return rc;
    }
    char generated[41], path[PATH_MAX];
    if (sl_password_generate(generated, 24) != 0) {
        snprintf(err, err_len, "cannot draw a random root password");
        return -SL_ERR_ERROR;
    }
    int rc = save_generated_password(srv, generated, path, err, err_len);
    if (rc == 0)
        rc = commit_root(srv, username, generated, err, err_len);
    memset(generated, 0, sizeof(generated));
    if (rc == 0)
        sl_log_warn("created the root user '%s' with a generated password, written to %s "
                    "(readable only by the user sluiced runs as): store it and delete the file; "
                    "set IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD before the first start to "
                    "choose them",
                    username, path);
    return rc;
}

/* --- sessions ----------------------------------------------------------------- */

static bool registry_grow(sl_server_t *srv)
{
    if (srv->sessions_count < srv->sessions_cap)
        return true;
    uint32_t cap = srv->sessions_cap ? srv->sessions_cap * 2 : 64;
    sl_session_t **grown = realloc(srv->sessions, sizeof(*grown) * cap);
    if (!grown)
        return false;
    srv->sessions = grown;
    srv->sessions_cap = cap;
    return true;
}

static void on_open(void *ctx, sl_conn_t *conn)
{
    sl_server_t *srv = ctx;
    sl_session_t *s = calloc(1, sizeof(*s));
    if (!s || !registry_grow(srv)) {
        free(s);
        sl_log_error("out of memory for a new connection");
        sl_conn_close(conn);
        return;
    }
    s->server = srv;
    s->conn = conn;
    s->id = sl_conn_id(conn);
    s->user_id = SL_CLIENT_NO_USER;
    s->last_seen_us = sl_clock_monotonic_us();
    sl_buf_init(&s->reply_body, srv->frame_max - SL_HEADER_SIZE);
    sl_arena_init(&s->arena, 16 * 1024, srv->frame_max);
    s->index = srv->sessions_count;
    srv->sessions[srv->sessions_count++] = s;
    sl_conn_set_user(conn, s);
    /* Until a login it may send only what a login needs (limits.h). */
    s->limits_bound = true;
    sl_session_sync_login(s);
    sl_log_debug("connection %u from %s", s->id, sl_conn_peer(conn));
}

void sl_session_sync_login(sl_session_t *s)
{
    if (s->bound == s->limits_bound)
        return;
    s->limits_bound = s->bound;
    sl_conn_set_frame_limit(s->conn, s->bound ? s->server->frame_max : SL_UNAUTH_FRAME_MAX);
    if (!s->bound)
        s->unbound_since_us = sl_clock_monotonic_us();
}

static void send_stale_eviction(sl_session_t *s, sl_u128_t client)
{
    sl_eviction_header_t e = {.client = client, .reason = SL_EVICT_STALE_CLIENT};
    uint8_t frame[SL_HEADER_SIZE];
    sl_eviction_header_encode(frame, &e);
    if (sl_conn_send_final(s->conn, frame, sizeof(frame)) == -EBUSY) {
        /* A reply is being written: the eviction follows it (on_sent). */
        s->evict_after_reply = SL_EVICT_STALE_CLIENT;
        s->evict_client = client;
    }
}

/* A reply is written: the session's limits follow a login or logout it
 * answered before the next header is read (lockstep), and its reply bytes
 * are released (reply_budget.c). */
static void on_sent(void *ctx, sl_conn_t *conn)
{
    (void)ctx;
    sl_session_t *s = sl_conn_user(conn);
    if (!s)
        return;
    sl_reply_span_end(s);
    sl_reply_budget_sent(s);
    if (s->evict_after_reply) {
        s->evict_after_reply = 0;
        send_stale_eviction(s, s->evict_client);
        return;
    }
    sl_session_sync_login(s);
}

static void on_close(void *ctx, sl_conn_t *conn)
{
    sl_server_t *srv = ctx;
    sl_session_t *s = sl_conn_user(conn);
    if (!s)
        return;
    if (s->internal)
        srv->internal_count--;
    sl_reply_span_end(s); /* a request in flight gets no reply now */
    sl_hashing_cancel(s);
    sl_background_cancel(s);
    sl_admit_disconnect(s);
    sl_reply_budget_close(s);
    /* Swap-remove from the registry. */
    sl_session_t *last = srv->sessions[--srv->sessions_count];
    srv->sessions[s->index] = last;
    last->index = s->index;
    sl_buf_free(&s->reply_body);
    sl_arena_free(&s->arena);
    sl_log_debug("connection %u closed", s->id);
    free(s);
}

/* No connection outlives the process, but after a kill the client table still lists the
 * consumer-group members of the connections that died with it (a clean stop journals a
 * disconnect logout as each connection closes). A client may come back under its client id
 * and keep its memberships (lifecycle.md 6), but the SDKs log in under a fresh id, and only
 * live connections are ever found stale: left alone, those members would keep their
 * partitions for good and nobody would read them. So they are noted at boot and treated as
 * members that went silent then (orphans_release). */
static void orphans_note(sl_server_t *srv)
{
    uint32_t n = sl_meta_clients_count(srv->meta);
    srv->orphans = calloc(n ? n : 1, sizeof(*srv->orphans));
    if (!srv->orphans) {
        sl_log_error("metadata: no memory to note the group members of the previous run");
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const sl_meta_client_t *cl = sl_meta_client_at(srv->meta, i);
        if (cl->memberships > 0)
            srv->orphans[srv->orphans_count++] = cl->client;
    }
    srv->orphans_since_us = sl_clock_monotonic_us();
    if (srv->orphans_count == 0) {
        free(srv->orphans);
        srv->orphans = NULL;
        return;
    }
    sl_log_info("metadata: %u consumer-group members of the previous run; released unless "
                "they log in again within 1.2 x heartbeat.interval",
                srv->orphans_count);
}

static bool client_connected(const sl_server_t *srv, sl_u128_t client)
{
    for (uint32_t i = 0; i < srv->sessions_count; i++)
        if (srv->sessions[i]->bound && sl_u128_eq(srv->sessions[i]->client, client))
            return true;
    return false;
}

/* Each orphan still in a group and not logged in again gets the logout its disconnect would
 * have journaled; the groups' stored offsets stay. In cluster mode the logouts go to the
 * metadata group (cluster_orphans_tick). */
static void orphans_release(sl_server_t *srv)
{
    sl_buf_t scratch;
    sl_buf_init(&scratch, 0);
    uint32_t released = 0;
    for (uint32_t i = 0; i < srv->orphans_count; i++) {
        const sl_meta_client_t *cl = sl_meta_client_find(srv->meta, srv->orphans[i]);
        if (!cl || cl->memberships == 0 || client_connected(srv, cl->client))
            continue;
        if (srv->cluster) {
            sl_cluster_submit_disconnect(srv->cluster, cl->client, cl->epoch, cl->user_id);
            released++;
            continue;
        }
        sl_meta_entry_t e = {.client = cl->client,
                             .request = UINT64_MAX,
                             .user_id = cl->user_id,
                             .operation = SL_OP_LOGOUT,
                             .body = sl_span(NULL, 0)};
        sl_buf_reset(&scratch);
        if (sl_server_commit(srv, &e, &scratch) == 0)
            released++;
    }
    sl_buf_free(&scratch);
    if (!srv->cluster)
        sl_log_info("released the consumer-group memberships of %u clients of the previous run",
                    released);
    else if (released > 0)
        sl_log_info("cluster: released the consumer-group memberships of %u clients with no "
                    "session on this primary",
                    released);
    free(srv->orphans);
    srv->orphans = NULL;
    srv->orphans_count = 0;
}

/* Cluster mode. Only the metadata primary commits, and it sees only its own connections: the
 * members whose sessions died with a killed primary (or live on a node that is a backup now,
 * or died with one) are members nobody will ever find stale here, and would keep their
 * partitions for good. So the primary notes, when it takes over and then every 6/5 of
 * heartbeat.interval, the member clients with no session on it, and releases through the
 * group those of the previous note that still have none (orphans_release): a member is
 * released after one to two such periods without a session here, unless it logged in here
 * again under its client id. A member connected to a backup then finds its membership gone
 * and joins again (through the leader). A node that stops being the primary forgets the
 * list; one that becomes the primary notes a new one and releases nothing before a period. */
static void cluster_orphans_tick(sl_server_t *srv, uint64_t now, uint64_t limit)
{
    uint32_t view = 0;
    bool primary = sl_cluster_primary_view(srv->cluster, &view);
    bool same = primary && srv->orphans_noted && srv->orphans_view == view;
    if (same && now - srv->orphans_since_us <= limit)
        return;
    if (same && srv->orphans)
        orphans_release(srv); /* frees the list */
    free(srv->orphans);
    srv->orphans = NULL;
    srv->orphans_count = 0;
    srv->orphans_noted = primary;
    srv->orphans_view = view;
    srv->orphans_since_us = now;
    if (!primary)
        return;
    uint32_t n = sl_meta_clients_count(srv->meta);
    for (uint32_t i = 0; i < n; i++) {
        const sl_meta_client_t *cl = sl_meta_client_at(srv->meta, i);
        if (cl->memberships == 0 || client_connected(srv, cl->client))
            continue;
        if (!srv->orphans && !(srv->orphans = calloc(n, sizeof(*srv->orphans)))) {
            sl_log_error("cluster: no memory to note the group members of other nodes");
            return;
        }
        srv->orphans[srv->orphans_count++] = cl->client;
    }
    if (srv->orphans_count > 0)
        sl_log_info("cluster: primary of view %u; %u consumer-group members have no session "
                    "here, released unless they log in here again within 1.2 x "
                    "heartbeat.interval",
                    view, srv->orphans_count);
}

/* lifecycle.md 8: a logged-in consumer-group member silent for 6/5 of the
 * heartbeat interval is evicted (13) and its memberships released. */
/* storage.md 8: the segment cleaner (message_expiry, max_topic_size). */
static void retention_tick(sl_server_t *srv)
{
    uint64_t now = sl_clock_monotonic_us();
    if (now - srv->last_retention_us < srv->cfg.data_maintenance.interval_us)
        return;
    srv->last_retention_us = now;
    if (srv->cluster) /* only each group's primary decides, through its log */
        sl_cluster_pgroups_retention(srv->cluster, sl_clock_realtime_us());
    else
        sl_partitions_retention(&srv->partitions, sl_clock_realtime_us());
}

/* glibc keeps heap memory it was given back resident: it shrinks the heap
 * only from its top, past a threshold it raises itself (to 38 MiB after the
 * first Argon2id block), and never below a live chunk. Reply buffers of a few
 * MiB come from the heap for the same reason (the mmap threshold rises to
 * 19 MiB), so after 200 connections that polled 1 MiB and never read had
 * closed, 16 MiB of free heap stayed resident (docs/reliability.md). Once the
 * free bytes grew by SL_HEAP_TRIM_STEP since the last trim, malloc_trim hands
 * their pages back. What is reused lowers the base, so bytes freed again
 * count anew. The walk is over free chunks only, once a second at most. */
static void heap_tick(sl_server_t *srv)
{
    size_t free_bytes = mallinfo2().fordblks;
    if (free_bytes < srv->heap_free_base)
        srv->heap_free_base = free_bytes;
    if (free_bytes - srv->heap_free_base < SL_HEAP_TRIM_STEP)
        return;
    malloc_trim(0);
    srv->heap_free_base = mallinfo2().fordblks;
}

/* The on_frame of a process started with SLUICE_FAULT_FILE (tests only): the fault plan is
 * brought up to date before each request, so a test that rewrites the control file and then
 * sends knows which plan that request meets. */
static void test_faults_creator(sl_server_t *srv)
{
    if (srv->segment_creator)
        sl_segment_creator_set_test(srv->segment_creator, sl_test_faults_create_delay_ms(),
                                    sl_test_faults_plan_armed());
}

static void on_frame_test_faults(void *ctx, sl_conn_t *conn, const uint8_t *frame, uint32_t size)
{
    /* Sends staged under the old plan are committed under it. */
    sl_messages_commit_staged(ctx);
    sl_test_faults_poll();
    test_faults_creator(ctx);
    sl_work_pool_hold(((sl_server_t *)ctx)->work_pool, sl_test_faults_hold_workers());
    sl_otel_hold(((sl_server_t *)ctx)->otel, sl_test_faults_hold_telemetry());
    sl_dispatch_frame(ctx, conn, frame, size);
}

/* Group commit of the sends of this turn (messages.c). */
static void on_turn_end(void *ctx, sl_loop_t *loop)
{
    (void)loop;
    sl_messages_commit_staged(ctx);
}

bool sl_session_overdue(uint64_t since_us, uint64_t now_us, uint64_t limit_us)
{
    /* Unsigned time: a stamp after now_us would wrap the difference into an
     * age of centuries, and close a session that lost its login a moment
     * ago (an eviction or logout whose reply was still being written when
     * the tick came) before its next request could be answered. */
    return now_us > since_us && now_us - since_us > limit_us;
}

/* tcp.login_timeout: a connection without a login holds a slot only so
 * long. A login waiting for the hash pool is the server's time, not the
 * client's: it is not closed meanwhile. */
static void login_timeouts(sl_server_t *srv, uint64_t now)
{
    uint64_t limit = srv->cfg.tcp.login_timeout_us;
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        sl_session_t *s = srv->sessions[i];
        sl_session_sync_login(s); /* may stamp unbound_since_us after now */
        if (s->bound || s->internal || s->hash_job || sl_conn_closing(s->conn) ||
            !sl_session_overdue(s->unbound_since_us, now, limit))
            continue;
        sl_log_info("connection %u (%s): closed: no login within %llu s", s->id,
                    sl_conn_peer(s->conn), (unsigned long long)(limit / 1000000u));
        sl_conn_close(s->conn);
    }
}

static void on_segment_created(void *ctx, sl_loop_t *loop)
{
    (void)loop;
    sl_server_t *srv = ctx;
    sl_segment_creator_reap(srv->segment_creator);
}

static void on_tick(void *ctx, sl_loop_t *loop)
{
    (void)loop;
    sl_server_t *srv = ctx;
    sl_test_faults_poll();
    test_faults_creator(srv);
    if (srv->work_pool)
        sl_work_pool_hold(srv->work_pool, sl_test_faults_hold_workers());
    sl_otel_hold(srv->otel, sl_test_faults_hold_telemetry());
    sl_log_tick();
    retention_tick(srv);
    heap_tick(srv);
    uint64_t now = sl_clock_monotonic_us();
    login_timeouts(srv, now);
    sl_http_tick(srv->http, srv);
    /* Parked polls resume when a reply is written or a connection closes;
     * the tick tries too, so no release can be missed for long. */
    sl_reply_budget_resume(srv);
    if (!srv->cfg.heartbeat.enabled)
        return;
    uint64_t limit = srv->cfg.heartbeat.interval_us * 6 / 5;
    if (srv->cluster)
        cluster_orphans_tick(srv, now, limit);
    else if (srv->orphans && now - srv->orphans_since_us > limit)
        orphans_release(srv);
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        sl_session_t *s = srv->sessions[i];
        /* sl_http_tick above may have dispatched for a session since now
         * was read: its stamp is after now, and fresh. */
        if (!s->bound || !sl_session_overdue(s->last_seen_us, now, limit))
            continue;
        const sl_meta_client_t *c = sl_meta_client_find(srv->meta, s->client);
        if (!c || c->memberships == 0)
            continue;
        sl_u128_t client = s->client;
        sl_admit_disconnect(s);
        sl_log_info("connection %u (%s): stale, evicted (reason 13)", s->id, sl_conn_peer(s->conn));
        send_stale_eviction(s, client);
    }
}

/* --- life cycle ------------------------------------------------------------------ */

static int meta_seal(void *ctx, const sl_meta_entry_t *e, sl_buf_t *out)
{
    sl_server_t *srv = ctx;
    return sl_encryption_seal_entry(srv->meta_aead, e, out);
}

static int meta_open(void *ctx, const sl_meta_entry_t *e, sl_buf_t *out)
{
    sl_server_t *srv = ctx;
    return sl_encryption_open_entry(srv->meta_aead, e, out);
}

/* The partition registry, before meta's partitions are opened in it. */
static void open_partitions(sl_server_t *srv)
{
    sl_partitions_init(&srv->partitions, srv->cfg.system.path, srv->frame_max);
    srv->partitions.frame_pool = srv->frame_pool;
    srv->partitions.validate_checksum = srv->cfg.system.partition.validate_checksum;
    srv->partitions.discard = sl_background_discard;
    srv->partitions.discard_ctx = srv;
    sl_journal_bound_init(&srv->partitions.journal_bound,
                          srv->cfg.system.partition.journal_memory_max);
    if (!srv->cfg.cluster.enabled) {
        int rc = sl_segment_creator_create(srv->cfg.system.path, &srv->segment_creator);
        if (rc < 0)
            sl_log_warn("first segments are created on the loop thread: no ring for them (%s)",
                        strerror(-rc));
        else
            srv->partitions.creator = sl_segment_creator_hook(srv->segment_creator);
    }
    sl_partitions_sweep_trash(&srv->partitions);
}

static int open_metadata(sl_server_t *srv, bool rotated, char *err, size_t err_len)
{
    int rc = sl_meta_create(srv->cfg.metadata.clients_table_max, sl_span_str(SL_SERVER_VERSION),
                            &srv->meta);
    if (rc != 0) {
        snprintf(err, err_len, "cannot create the metadata state: %s", sl_strerror(rc));
        return rc;
    }
    if (srv->cfg.cluster.enabled) {
        /* The metadata group's replica is the log (cluster.h): no store. */
        open_partitions(srv);
        return sl_cluster_open(srv, err, err_len);
    }
    sl_meta_machine_t machine = {srv, machine_apply, machine_encode, machine_decode, NULL, NULL};
    if (srv->aead) {
        /* The metadata's own context: checkpoints run on the loop thread too, but a
         * context of its own keeps the two users' nonce pools apart. */
        int crc = sl_encryption_context(&srv->cfg, &srv->meta_aead);
        if (crc != 0) {
            snprintf(err, err_len, "cannot set up AES-256-GCM: %s", sl_strerror(crc));
            return crc;
        }
        machine.seal = meta_seal;
        machine.open = meta_open;
    }
    rc = sl_meta_store_open(&srv->store, srv->cfg.system.path, &machine,
                            srv->cfg.metadata.checkpoint_interval, err, err_len);
    if (rc != 0)
        return rc;
    srv->last_timestamp = sl_meta_store_last_timestamp(srv->store);
    const sl_meta_store_info_t *info = sl_meta_store_info(srv->store);
    sl_log_info("metadata: %s, checkpoint op %llu, %llu entries replayed, last op %llu",
                info->fresh ? "fresh" : "recovered", (unsigned long long)info->checkpoint_op,
                (unsigned long long)info->replayed,
                (unsigned long long)sl_meta_store_last_op(srv->store));
    if (info->torn_bytes)
        sl_log_warn("metadata: cut %llu bytes of a torn journal tail",
                    (unsigned long long)info->torn_bytes);
    /* After a key rotation the metadata is sealed again with the new key at once (a snapshot,
     * and a journal without the entries it covers), so only message segments still need
     * previous_key. */
    if (rotated && (rc = sl_meta_store_checkpoint(srv->store)) != 0) {
        snprintf(err, err_len, "metadata: cannot re-seal it with the new key: %s",
                 sl_strerror(rc));
        return rc;
    }
    if (rotated)
        sl_log_info("metadata: sealed again with the new key");
    if (!sl_meta_user_by_id(srv->meta, 0)) {
        rc = create_root(srv, err, err_len);
        if (rc != 0)
            return rc;
    }
    orphans_note(srv);
    /* Every partition meta knows, open; leftovers of interrupted deletes gone. */
    open_partitions(srv);
    sl_partitions_sync(&srv->partitions, srv->meta, true);
    return 0;
}

/* A listening socket on a configured address, retried while it is in use:
 * EADDRINUSE may be a predecessor's socket on its way out (loop.h). */
typedef struct listen_try {
    const sl_config_address_t *a;
    int *fd;
} listen_try_t;

static int listen_once(void *ctx)
{
    listen_try_t *t = ctx;
    return sl_loop_listen(t->a->host, t->a->port, SOMAXCONN, t->fd);
}

static int listen_retry(const sl_config_address_t *a, int *fd)
{
    listen_try_t t = {a, fd};
    int rc = sl_listen_retry(listen_once, &t);
    if (rc != 0)
        *fd = -1;
    return rc;
}

/* The listeners come first: a server that cannot serve must not create or
 * change its data directory. The sockets are the server's (the loop is
 * given them and leaves them open); SOMAXCONN holds the connections that
 * arrive while the metadata is recovered. */
static int bind_listener(sl_server_t *srv, char *err, size_t err_len)
{
    const sl_config_address_t *a = &srv->cfg.tcp.address;
    int rc = listen_retry(a, &srv->listen_fd);
    if (rc != 0) {
        snprintf(err, err_len, "cannot listen on %s: %s", a->text, strerror(-rc));
        return -SL_ERR_CANNOT_BIND_TO_SOCKET;
    }
    if (!srv->cfg.websocket.enabled)
        return 0;
    a = &srv->cfg.websocket.address;
    rc = listen_retry(a, &srv->ws_listen_fd);
    if (rc != 0) {
        snprintf(err, err_len, "cannot listen on %s (websocket.address): %s", a->text,
                 strerror(-rc));
        return -SL_ERR_CANNOT_BIND_TO_SOCKET;
    }
    srv->ws_port = sl_loop_socket_port(srv->ws_listen_fd);
    return 0;
}

/* tls.md 2: the certificate is chosen before anything is bound or written,
 * and the log says which way it went. */
static int open_tls(const sl_config_tls_t *t, const char *section, sl_tls_ctx_t **out, char *err,
                    size_t err_len)
{
    sl_tls_settings_t s = {section, t->self_signed, t->cert_file, t->key_file};
    sl_tls_source_t source;
    if (sl_tls_ctx_create(&s, out, &source, err, err_len) != 0)
        return -SL_ERR_INVALID_CONFIGURATION;
    if (source == SL_TLS_SOURCE_SELF_SIGNED)
        sl_log_warn("%s: no certificate at %s: serving an ephemeral self-signed certificate for "
                    "localhost, new at every start (clients must turn verification off)",
                    section, t->cert_file);
    else
        sl_log_info(
            "%s: serving the certificate %s with the key %s%s", section, t->cert_file, t->key_file,
            source == SL_TLS_SOURCE_FILES_FOUND ? " (self_signed is on, but the file exists)" : "");
    return 0;
}

static int start_loop(sl_server_t *srv, char *err, size_t err_len)
{
    const sl_config_t *cfg = &srv->cfg;
    bool test_faults = sl_test_faults_init();
    /* A control file that holds the workers at start holds them before the first tick: a
     * job submitted at boot (a state transfer's verification) could run before it. */
    if (test_faults && srv->work_pool)
        sl_work_pool_hold(srv->work_pool, sl_test_faults_hold_workers());
    sl_loop_config_t lc;
    sl_loop_config_init(&lc);
    lc.listen_fd = srv->listen_fd;
    if (srv->tcp_tls) {
        lc.transport = &sl_tls_transport;
        lc.transport_ctx = srv->tcp_tls;
    }
    if (srv->ws_listen_fd >= 0)
        lc.doors[lc.door_count++] = (sl_loop_door_t){
            srv->ws_listen_fd, srv->ws_tls ? &sl_wss_transport : &sl_ws_transport, &srv->ws_door};
    lc.handshake_timeout_ms = (uint32_t)(cfg->message_bus.handshake_grace_us / 1000u);
    lc.max_frame = srv->frame_max;
    lc.frame_budget = cfg->message_bus.receive_memory_max;
    lc.frame_timeout_ms = (uint32_t)(cfg->tcp.frame_timeout_us / 1000u);
    lc.reply_timeout_ms = (uint32_t)(cfg->tcp.reply_timeout_us / 1000u);
    /* The HTTP door's internal sessions are connections of the loop too;
     * they do not take client slots. */
    lc.max_conns = cfg->tcp.max_connections + (cfg->http.enabled ? cfg->http.sessions : 0);
    lc.frames_per_turn = cfg->server.per_connection_work_max;
    lc.frame_pool = srv->frame_pool;
    lc.cb =
        (sl_loop_callbacks_t){.on_open = on_open,
                              .on_frame = test_faults ? on_frame_test_faults : sl_dispatch_frame,
                              .on_sent = on_sent,
                              .on_close = on_close,
                              .on_tick = on_tick,
                              .on_turn_end = on_turn_end};
    lc.events[lc.events_count++] =
        (sl_loop_event_t){sl_hash_pool_event_fd(srv->hash_pool), sl_hashing_on_event};
    lc.events[lc.events_count++] =
        (sl_loop_event_t){sl_work_pool_event_fd(srv->work_pool), sl_background_on_event};
    if (srv->segment_creator)
        lc.events[lc.events_count++] = (sl_loop_event_t){
            sl_segment_creator_event_fd(srv->segment_creator), on_segment_created};
    if (srv->cluster) {
        lc.events[lc.events_count++] =
            (sl_loop_event_t){sl_cluster_inbox_fd(srv->cluster), sl_cluster_on_frames};
        lc.events[lc.events_count++] =
            (sl_loop_event_t){sl_cluster_timer_fd(srv->cluster), sl_cluster_on_timer};
    }
    lc.ctx = srv;
    int rc = sl_loop_create(&lc, &srv->loop);
    if (rc != 0) {
        /* The socket is bound already: what failed is the ring or its buffers. */
        srv->io_uring_failed = true;
        snprintf(err, err_len, "cannot start the io_uring event loop on %s: %s",
                 cfg->tcp.address.text, sl_loop_diagnose(rc));
        return rc;
    }
    if (srv->ws_listen_fd >= 0)
        sl_log_info(cfg->websocket.address.ipv6 ? "serving WebSocket on [%s]:%u%s"
                                                : "serving WebSocket on %s:%u%s",
                    cfg->websocket.address.host, srv->ws_port, srv->ws_tls ? " (WSS)" : "");
    sl_log_info(cfg->tcp.address.ipv6 ? "listening on [%s]:%u%s" : "listening on %s:%u%s",
                cfg->tcp.address.host, sl_loop_port(srv->loop), srv->tcp_tls ? " (TLS)" : "");
    return 0;
}

/* The HTTP door: after the loop exists (its internal connections are the
 * loop's), before it runs. */
static int start_http(sl_server_t *srv, char *err, size_t err_len)
{
    int fd = srv->http_listen_fd;
    srv->http_listen_fd = -1; /* the door's now, even when it fails */
    bool https = srv->cfg.http.tls.enabled;
    int rc = sl_http_start(srv, fd, https ? &srv->http_tls : NULL, &srv->http, err, err_len);
    if (rc != 0)
        return rc;
    const sl_config_address_t *a = &srv->cfg.http.address;
    sl_log_info(a->ipv6 ? "HTTP API on [%s]:%u%s" : "HTTP API on %s:%u%s", a->host, srv->http_port,
                https ? " (HTTPS)" : "");
    return 0;
}

/* Files and directories are created with explicit modes (base/io.h); the
 * umask is set to match, so neither a permissive caller (umask 000) widens
 * what the server makes nor does anything created outside those calls end
 * up wider. */
static void set_file_modes(const sl_config_t *cfg)
{
    sl_io_set_group_access(cfg->system.group_access);
    umask(cfg->system.group_access ? 027 : 077);
}

/* Start-up order: bind the listener, lock the data directory, then the
 * metadata, then the loop (docs/architecture.md, "Start-up"). */
int sl_server_open(sl_server_t *srv, const sl_config_t *cfg, char *err, size_t err_len)
{
    memset(srv, 0, sizeof(*srv));
    srv->listen_fd = -1;
    srv->http_listen_fd = -1;
    srv->ws_listen_fd = -1;
    srv->lock_fd = -1;
    srv->cfg = *cfg;
    sl_metrics_init(&srv->metrics);
    /* First: the start-up's own log lines are exported too. */
    int rc = sl_otel_open(cfg, &srv->otel, err, err_len);
    if (rc != 0)
        return rc;
    srv->start_us = sl_clock_realtime_us();
    srv->frame_max = (uint32_t)cfg->message_bus.max_message_size;
    sl_buf_init(&srv->admitted, srv->frame_max);
    sl_buf_init(&srv->batch_sums, 0);
    rc = sl_frame_pool_create(SL_LOOP_BUF_SIZE_DEFAULT, srv->frame_max,
                              cfg->message_bus.frame_pool_idle_max, &srv->frame_pool);
    if (rc != 0) {
        snprintf(err, err_len, "cannot create the frame pool: %s", strerror(-rc));
        return rc;
    }
    set_file_modes(cfg);
    /* One worker: what it does (removing deleted trees, building a snapshot) has no hurry,
     * and one at a time keeps sl_diag_snapshot's single-flight guard from refusing. */
    rc = sl_work_pool_create(1, &srv->work_pool);
    if (rc != 0) {
        snprintf(err, err_len, "cannot start the worker thread: %s", strerror(-rc));
        return rc;
    }
    if (cfg->tcp.tls.enabled) {
        rc = open_tls(&cfg->tcp.tls, "tcp.tls", &srv->tcp_tls, err, err_len);
        if (rc != 0)
            return rc;
    }
    if (cfg->websocket.enabled && cfg->websocket.tls.enabled) {
        rc = open_tls(&cfg->websocket.tls, "websocket.tls", &srv->ws_tls, err, err_len);
        if (rc != 0)
            return rc;
    }
    srv->ws_door = (sl_ws_door_t){.message_max = sl_config_ws_message_max(cfg),
                                  .frame_max = sl_config_ws_frame_max(cfg),
                                  .accept_unmasked = cfg->websocket.accept_unmasked_frames,
                                  .tls = srv->ws_tls};
    if (cfg->http.enabled && cfg->http.tls.enabled) {
        rc = sl_http_tls_load(cfg, &srv->http_tls, err, err_len);
        if (rc != 0)
            return rc;
        sl_log_info("http.tls: serving the certificate %s with the key %s",
                    cfg->http.tls.cert_file, cfg->http.tls.key_file);
    }
    rc = bind_listener(srv, err, err_len);
    if (rc == 0 && cfg->http.enabled)
        rc = sl_http_bind(cfg, &srv->http_listen_fd, &srv->http_port, err, err_len);
    if (rc == 0)
        rc = sl_datadir_lock(cfg->system.path, &srv->lock_fd, err, err_len);
    bool rotated = false;
    if (rc == 0)
        rc = sl_encryption_open_datadir(cfg, &srv->aead, &rotated, err, err_len);
    if (rc == 0 && srv->aead) {
        rc = sl_tail_cache_create(cfg->system.encryption.tail_cache_max, srv->frame_pool,
                                  &srv->tail_cache);
        if (rc != 0)
            snprintf(err, err_len, "cannot create the encryption tail cache: out of memory");
    }
    if (rc == 0)
        rc = open_metadata(srv, rotated, err, err_len);
    if (rc == 0 && sl_sysinfo_init(&srv->sysinfo, cfg->system.path, SL_SERVER_VERSION) != 0) {
        snprintf(err, err_len, "cannot read process information");
        rc = -SL_ERR_ERROR;
    }
    if (rc != 0)
        return rc;
    rc = sl_hash_pool_create(cfg->server.password_hash_threads, cfg->server.password_hash_queue_max,
                             &srv->hash_pool);
    if (rc != 0) {
        snprintf(err, err_len, "cannot start the password hashing threads: %s", strerror(-rc));
        return rc;
    }
    rc = start_loop(srv, err, err_len);
    if (rc == 0 && cfg->http.enabled)
        rc = start_http(srv, err, err_len);
    return rc;
}

int sl_server_run(sl_server_t *srv)
{
    return sl_loop_run(srv->loop);
}

void sl_server_stop(sl_server_t *srv)
{
    if (srv->loop)
        sl_loop_stop(srv->loop);
}

static void log_frame_pool(const sl_frame_pool_t *pool)
{
    sl_frame_pool_stats_t st;
    sl_frame_pool_stats(pool, &st);
    sl_log_info("frame pool: %llu hits, %llu misses, %llu small, %llu dropped at the cap; "
                "%u buffers idle (%.1f of %.1f MiB), %u still out",
                (unsigned long long)st.hits, (unsigned long long)st.misses,
                (unsigned long long)st.small, (unsigned long long)st.dropped, st.idle_buffers,
                (double)st.idle_bytes / 1048576.0, (double)st.idle_max / 1048576.0, st.out_buffers);
}

static void log_tail_cache(const sl_tail_cache_t *c)
{
    sl_tail_cache_stats_t st;
    sl_tail_cache_stats(c, &st);
    sl_log_info("encryption tail cache: %llu messages served from it, %llu decrypted; %llu batches "
                "kept, %llu not kept, %llu evicted; at most %llu bytes held of %llu",
                (unsigned long long)st.hits, (unsigned long long)st.misses,
                (unsigned long long)st.added, (unsigned long long)st.skipped,
                (unsigned long long)st.evicted, (unsigned long long)st.peak,
                (unsigned long long)st.max);
}

void sl_server_close(sl_server_t *srv)
{
    /* The loop has stopped: HTTP requests still waiting for it are answered. */
    sl_http_stop(srv->http);
    srv->http = NULL;
    sl_http_tls_free(&srv->http_tls); /* after the door that pointed at it */
    if (srv->http_listen_fd >= 0)
        close(srv->http_listen_fd);
    if (srv->loop)
        sl_loop_destroy(srv->loop);
    /* After the loop: its connections' sessions referred to them. */
    sl_tls_ctx_free(srv->tcp_tls);
    sl_tls_ctx_free(srv->ws_tls);
    /* The loop leaves the sockets it was given open. */
    if (srv->listen_fd >= 0)
        close(srv->listen_fd);
    if (srv->ws_listen_fd >= 0)
        close(srv->ws_listen_fd);
    /* After the loop: its ring no longer reads the pool's eventfd. */
    sl_hash_pool_destroy(srv->hash_pool);
    /* After the loop too (it read the plane's eventfd and the timer), before
     * the partitions and meta the replica's machine applies to. */
    sl_cluster_close(srv->cluster);
    srv->cluster = NULL;
    /* Trees not removed yet stay in the trash for the next boot. */
    sl_work_pool_destroy(srv->work_pool);
    sl_partitions_close(&srv->partitions);
    /* After the partitions: each waited for its creation in flight. */
    sl_segment_creator_destroy(srv->segment_creator);
    srv->segment_creator = NULL;
    if (srv->tail_cache)
        log_tail_cache(srv->tail_cache);
    sl_tail_cache_destroy(srv->tail_cache);
    free(srv->tail_notes);
    /* Connections, partitions and the tail cache gave every frame back: the pool can go. */
    if (srv->frame_pool) {
        log_frame_pool(srv->frame_pool);
        sl_frame_pool_destroy(srv->frame_pool);
    }
    if (srv->store)
        sl_meta_store_close(srv->store);
    if (srv->meta)
        sl_meta_destroy(srv->meta);
    sl_sysinfo_destroy(&srv->sysinfo);
    free(srv->sessions);
    free(srv->orphans);
    sl_assert(srv->staged_count == 0);
    free(srv->staged);
    free(srv->staged_batches);
    free(srv->staged_bases);
    free(srv->staged_picks);
    sl_buf_free(&srv->admitted);
    sl_aead_destroy(srv->aead);
    sl_aead_destroy(srv->meta_aead);
    sl_metrics_close(&srv->metrics);
    sl_buf_free(&srv->batch_sums);
    /* Every other thread of the server has stopped: none logs any more. */
    sl_otel_close(srv->otel);
    /* Last: every file of the data directory is closed. */
    sl_datadir_unlock(srv->lock_fd);
    memset(srv, 0, sizeof(*srv));
    srv->listen_fd = -1;
    srv->http_listen_fd = -1;
    srv->ws_listen_fd = -1;
    srv->lock_fd = -1;
}
