/* The sluiced process core: opening the data directory, recovering the
 * metadata, creating the root user on first boot, and the loop callbacks
 * that keep one session per connection. */
#include "server/server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/test_faults.h"
#include "wire/cmd_system.h"
#include "wire/codec.h"

/* --- the state machine behind the store --------------------------------------- */

static int machine_apply(void *ctx, const sl_meta_entry_t *e, sl_buf_t *reply)
{
    return sl_meta_apply(ctx, e, reply);
}

static int machine_encode(void *ctx, sl_buf_t *out)
{
    return sl_meta_encode(ctx, out);
}

static int machine_decode(void *ctx, sl_span_t bytes)
{
    return sl_meta_decode(bytes, ctx);
}

/* --- first boot: the root user (defaults.md 2) ---------------------------------- */

static int create_root(sl_server_t *srv, char *err, size_t err_len)
{
    const sl_config_t *cfg = &srv->cfg;
    char generated[41];
    const char *username = cfg->root.username[0] ? cfg->root.username : "iggy";
    const char *password = cfg->root.password;
    if (!cfg->root.password[0]) {
        if (sl_password_generate(generated, 24) != 0) {
            snprintf(err, err_len, "cannot draw a random root password");
            return -SL_ERR_ERROR;
        }
        password = generated;
    }
    char phc[SL_PASSWORD_HASH_MAX];
    if (sl_password_hash(sl_span_str(password), phc) != 0) {
        snprintf(err, err_len, "cannot hash the root password");
        return -SL_ERR_ERROR;
    }
    sl_buf_t body, reply;
    sl_buf_init(&body, 0);
    sl_buf_init(&reply, 0);
    sl_meta_entry_t e;
    int rc = sl_meta_root_entry(&body, sl_span_str(username), sl_span_str(phc),
                                sl_meta_store_last_op(srv->store) + 1, &e);
    if (rc == 0)
        rc = sl_meta_store_commit(srv->store, &e, &reply);
    sl_buf_free(&body);
    sl_buf_free(&reply);
    if (rc != 0) {
        snprintf(err, err_len, "cannot create the root user: %s", sl_strerror(rc));
        return rc;
    }
    srv->last_timestamp = sl_meta_store_last_timestamp(srv->store);
    if (cfg->root.password[0])
        sl_log_info("created the root user '%s' with the configured password", username);
    else
        sl_log_warn("created the root user '%s' with the password '%s' (shown once: store it "
                    "now; set IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD before the first start "
                    "to choose them)",
                    username, password);
    memset(generated, 0, sizeof(generated));
    return 0;
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
    sl_log_debug("connection %u from %s", s->id, sl_conn_peer(conn));
}

/* A reply is written: a connection that once polled a large batch does not
 * keep a large buffer while it idles. */
#define SESSION_BUFFER_KEEP (1024u * 1024u)

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

static void on_sent(void *ctx, sl_conn_t *conn)
{
    (void)ctx;
    sl_session_t *s = sl_conn_user(conn);
    if (s && s->evict_after_reply) {
        s->evict_after_reply = 0;
        send_stale_eviction(s, s->evict_client);
        return;
    }
    if (s && s->reply_body.cap > SESSION_BUFFER_KEEP) {
        size_t max = s->reply_body.max;
        sl_buf_free(&s->reply_body);
        sl_buf_init(&s->reply_body, max);
    }
}

static void on_close(void *ctx, sl_conn_t *conn)
{
    sl_server_t *srv = ctx;
    sl_session_t *s = sl_conn_user(conn);
    if (!s)
        return;
    sl_hashing_cancel(s);
    sl_admit_disconnect(s);
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
 * have journaled; the groups' stored offsets stay. Once. */
static void orphans_release(sl_server_t *srv)
{
    sl_buf_t scratch;
    sl_buf_init(&scratch, 0);
    uint32_t released = 0;
    for (uint32_t i = 0; i < srv->orphans_count; i++) {
        const sl_meta_client_t *cl = sl_meta_client_find(srv->meta, srv->orphans[i]);
        if (!cl || cl->memberships == 0 || client_connected(srv, cl->client))
            continue;
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
    sl_log_info("released the consumer-group memberships of %u clients of the previous run",
                released);
    free(srv->orphans);
    srv->orphans = NULL;
    srv->orphans_count = 0;
}

/* lifecycle.md 8: a logged-in consumer-group member silent for 6/5 of the
 * heartbeat interval is evicted (13) and its memberships released. */
/* storage.md 8: the segment cleaner (message_expiry, max_topic_size). */
static void retention_tick(sl_server_t *srv)
{
    uint64_t now = sl_clock_monotonic_us();
    if (now - srv->last_retention_us < SL_RETENTION_INTERVAL_US)
        return;
    srv->last_retention_us = now;
    sl_partitions_retention(&srv->partitions, sl_clock_realtime_us());
}

/* The on_frame of a process started with SLUICE_FAULT_FILE (tests only): the fault plan is
 * brought up to date before each request, so a test that rewrites the control file and then
 * sends knows which plan that request meets. */
static void on_frame_test_faults(void *ctx, sl_conn_t *conn, const uint8_t *frame, uint32_t size)
{
    /* Sends staged under the old plan are committed under it. */
    sl_messages_commit_staged(ctx);
    sl_test_faults_poll();
    sl_dispatch_frame(ctx, conn, frame, size);
}

/* Group commit of the sends of this turn (messages.c). */
static void on_turn_end(void *ctx, sl_loop_t *loop)
{
    (void)loop;
    sl_messages_commit_staged(ctx);
}

static void on_tick(void *ctx, sl_loop_t *loop)
{
    (void)loop;
    sl_server_t *srv = ctx;
    sl_test_faults_poll();
    retention_tick(srv);
    if (!srv->cfg.heartbeat.enabled)
        return;
    uint64_t now = sl_clock_monotonic_us();
    uint64_t limit = srv->cfg.heartbeat.interval_us * 6 / 5;
    if (srv->orphans && now - srv->orphans_since_us > limit)
        orphans_release(srv);
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        sl_session_t *s = srv->sessions[i];
        if (!s->bound || now - s->last_seen_us <= limit)
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

static int make_dir(const char *path, char *err, size_t err_len)
{
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(err, err_len, "cannot create the data directory %s: %s", path, strerror(errno));
        return -SL_ERR_CANNOT_CREATE_BASE_DIRECTORY;
    }
    return 0;
}

static int open_metadata(sl_server_t *srv, char *err, size_t err_len)
{
    int rc = sl_meta_create(srv->cfg.metadata.clients_table_max, sl_span_str(SL_SERVER_VERSION),
                            &srv->meta);
    if (rc != 0) {
        snprintf(err, err_len, "cannot create the metadata state: %s", sl_strerror(rc));
        return rc;
    }
    sl_meta_machine_t machine = {srv->meta, machine_apply, machine_encode, machine_decode};
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
    if (!sl_meta_user_by_id(srv->meta, 0)) {
        rc = create_root(srv, err, err_len);
        if (rc != 0)
            return rc;
    }
    orphans_note(srv);
    /* Every partition meta knows, open; leftovers of interrupted deletes gone. */
    sl_partitions_init(&srv->partitions, srv->cfg.system.path, srv->frame_max);
    srv->partitions.frame_pool = srv->frame_pool;
    sl_partitions_sync(&srv->partitions, srv->meta, true);
    return 0;
}

int sl_server_open(sl_server_t *srv, const sl_config_t *cfg, char *err, size_t err_len)
{
    memset(srv, 0, sizeof(*srv));
    srv->cfg = *cfg;
    srv->start_us = sl_clock_realtime_us();
    srv->frame_max = (uint32_t)cfg->message_bus.max_message_size;
    sl_buf_init(&srv->admitted, srv->frame_max);
    int rc = sl_frame_pool_create(SL_LOOP_BUF_SIZE_DEFAULT, srv->frame_max,
                                  cfg->message_bus.frame_pool_idle_max, &srv->frame_pool);
    if (rc != 0) {
        snprintf(err, err_len, "cannot create the frame pool: %s", strerror(-rc));
        return rc;
    }
    rc = make_dir(cfg->system.path, err, err_len);
    if (rc == 0)
        rc = open_metadata(srv, err, err_len);
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

    bool test_faults = sl_test_faults_init();
    sl_loop_config_t lc;
    sl_loop_config_init(&lc);
    lc.host = cfg->tcp.address.host;
    lc.port = cfg->tcp.address.port;
    lc.max_frame = srv->frame_max;
    lc.max_conns = cfg->tcp.max_connections;
    lc.frames_per_turn = cfg->server.per_connection_work_max;
    lc.frame_pool = srv->frame_pool;
    lc.cb =
        (sl_loop_callbacks_t){.on_open = on_open,
                              .on_frame = test_faults ? on_frame_test_faults : sl_dispatch_frame,
                              .on_sent = on_sent,
                              .on_close = on_close,
                              .on_tick = on_tick,
                              .on_turn_end = on_turn_end};
    lc.event_fd = sl_hash_pool_event_fd(srv->hash_pool);
    lc.on_event = sl_hashing_on_event;
    lc.ctx = srv;
    rc = sl_loop_create(&lc, &srv->loop);
    if (rc != 0) {
        snprintf(err, err_len, "cannot start the io_uring event loop on %s: %s",
                 cfg->tcp.address.text, sl_loop_diagnose(rc));
        return rc;
    }
    sl_log_info(cfg->tcp.address.ipv6 ? "listening on [%s]:%u" : "listening on %s:%u",
                cfg->tcp.address.host, sl_loop_port(srv->loop));
    return 0;
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

void sl_server_close(sl_server_t *srv)
{
    if (srv->loop)
        sl_loop_destroy(srv->loop);
    /* After the loop: its ring no longer reads the pool's eventfd. */
    sl_hash_pool_destroy(srv->hash_pool);
    sl_partitions_close(&srv->partitions);
    /* Connections and partitions gave every frame back: the pool can go. */
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
    memset(srv, 0, sizeof(*srv));
}
