/* The metadata group's host on the loop thread (server/cluster.h). */
#include "server/cluster_internal.h"

#include <errno.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "base/log.h"
#include "server/replica_plane.h"
#include "server/server.h"
#include "server/trip_trace.h"
#include "server/vsr_storage.h"
#include "vsr/handshake.h"
#include "vsr/replica.h"
#include "wire/cmd_users.h"
#include "wire/codec.h"


/* --- the machine: the single-node apply and its effects ------------------------------ */

/* The operations whose commit changes the partitions (sl_server_after_commit). */
static bool partitions_op(uint8_t operation)
{
    switch (operation) {
    case SL_OP_CREATE_TOPIC_WITH_ASSIGNMENTS:
    case SL_OP_CREATE_PARTITIONS_WITH_ASSIGNMENTS:
    case SL_OP_DELETE_PARTITIONS:
    case SL_OP_DELETE_TOPIC:
    case SL_OP_DELETE_STREAM:
    case SL_OP_UPDATE_TOPIC:
        return true;
    default:
        return false;
    }
}

static void machine_apply(void *ctx, const sl_vsr_prepare_t *p, sl_span_t body, sl_buf_t *reply)
{
    sl_cluster_t *c = ctx;
    sl_server_t *srv = c->srv;
    sl_meta_entry_t e = {.op = p->op,
                         .timestamp = p->timestamp,
                         .client = p->client,
                         .request = p->request,
                         .user_id = p->user_id,
                         .operation = p->operation,
                         .request_checksum = p->request_checksum,
                         .body = body};
    /* Before the apply: a DeleteStream by name cannot be resolved after it. */
    uint32_t stream_id = sl_server_commit_stream(srv, &e);
    size_t mark = reply->len;
    int rc = sl_meta_apply(srv->meta, &e, reply);
    if (rc != 0) {
        /* Every replica refuses the same prepare the same way: the state
         * stays in step. Admission never builds such a body. */
        sl_log_error("cluster: op %llu (operation %u) does not apply: %s",
                     (unsigned long long)p->op, p->operation, sl_strerror(rc));
        reply->len = mark;
        sl_result_put_error(reply, SL_ERR_ERROR);
        return;
    }
    if (p->timestamp > srv->last_timestamp)
        srv->last_timestamp = p->timestamp;
    if (c->booting)
        return;
    if (p->op <= c->replay_until) {
        /* An op this node may have applied before it restarted: its
         * partition directories may exist and hold messages. The boot sync
         * opens what is there instead of clearing a "new" topic's
         * directory, as the commit's sync would (that lost every message of
         * a topic created since the last metadata checkpoint). */
        if (partitions_op(p->operation))
            sl_partitions_sync(&srv->partitions, srv->meta, true);
    } else {
        sl_server_after_commit(srv, &e, stream_id,
                               sl_span(reply->data + mark, reply->len - mark));
    }
    sl_cluster_pgroups_sync(c, false);
    if (p->operation == SL_OP_PURGE_STREAM || p->operation == SL_OP_PURGE_TOPIC)
        /* The partition groups this node leads take the purge op now, before
         * the reply goes out: a send that follows the reply lands after it. */
        sl_cluster_pgroups_purge_due(c);
}

static void machine_snapshot(void *ctx, sl_buf_t *out)
{
    sl_cluster_t *c = ctx;
    if (sl_meta_encode(c->srv->meta, out) != 0)
        sl_log_error("cluster: the metadata snapshot did not encode");
}

/* Swaps in a new state: nothing keeps pointers into meta across calls
 * (sessions hold ids), so the old one can go at once. */
static void swap_meta(sl_cluster_t *c, sl_meta_t *fresh)
{
    sl_server_t *srv = c->srv;
    sl_meta_destroy(srv->meta);
    srv->meta = fresh;
    if (!c->booting) {
        sl_partitions_sync(&srv->partitions, srv->meta, false);
        sl_cluster_pgroups_sync(c, false);
    }
}

static sl_meta_t *empty_meta(const sl_server_t *srv)
{
    sl_meta_t *m = NULL;
    if (sl_meta_create(srv->cfg.metadata.clients_table_max, sl_span_str(SL_SERVER_VERSION), &m) !=
        0)
        return NULL;
    return m;
}

static int machine_restore(void *ctx, sl_span_t snapshot)
{
    sl_cluster_t *c = ctx;
    sl_meta_t *m = empty_meta(c->srv);
    if (!m)
        return -1;
    int rc = sl_meta_decode(snapshot, m);
    if (rc != 0) {
        sl_log_error("cluster: a metadata snapshot does not decode: %s", sl_strerror(rc));
        sl_meta_destroy(m);
        m = empty_meta(c->srv);
        if (m)
            swap_meta(c, m);
        return -1;
    }
    swap_meta(c, m);
    /* Opening restores its own checkpoint; later, only a state transfer
     * does (the durability tests tell the two apart by this line). */
    sl_log_info("cluster: metadata restored from a snapshot at op %llu (%s)",
                (unsigned long long)sl_meta_last_op(c->srv->meta),
                c->booting ? "own checkpoint" : "state transfer");
    return 0;
}

static void machine_reset(void *ctx)
{
    sl_cluster_t *c = ctx;
    sl_meta_t *m = empty_meta(c->srv);
    if (m)
        swap_meta(c, m);
    else
        sl_log_error("cluster: out of memory emptying the metadata state");
}

/* --- the bus: frames to peers, answers to sessions ----------------------------------- */

static void bus_send(void *ctx, uint8_t replica, const uint8_t *frame, uint32_t size)
{
    sl_cluster_t *c = ctx;
    sl_replica_plane_send(c->plane, replica, frame, size);
}

static void bus_trace(void *ctx, const char *line)
{
    (void)ctx;
    /* A state transfer's steps get a rate limit of their own, apart from
     * the repair lines (cluster_partition.c says why). */
    if (strncmp(line, "state transfer", 14) == 0)
        sl_log_info("cluster: %s", line);
    else
        sl_log_info("cluster: %s", line);
}

/* The session waiting for this answer: the client id's, and for a Reply
 * the same request number, since another connection of the client id may
 * have a request of its own answered meanwhile (a Logout on disconnect,
 * request u64::MAX, refused with 57 while this one's login is in flight).
 * An Eviction carries no request number: the client's waiting session. */
sl_session_t *sl_cluster_waiting_session(const sl_cluster_t *c, sl_u128_t client,
                                         const uint8_t *frame)
{
    if (sl_u128_is_zero(client))
        return NULL;
    sl_reply_header_t h;
    bool reply = frame[SL_HDR_OFF_COMMAND] != SL_COMMAND_EVICTION;
    if (reply && sl_reply_header_decode(frame, c->srv->frame_max, &h) != 0)
        return NULL;
    for (uint32_t i = 0; i < c->srv->sessions_count; i++) {
        sl_session_t *s = c->srv->sessions[i];
        if (s->vsr_wait != SL_CLUSTER_WAIT_NONE && sl_u128_eq(s->vsr_req.client, client) &&
            (!reply || h.request == s->vsr_req.request))
            return s;
    }
    return NULL;
}

static void deliver_eviction(sl_session_t *s, const uint8_t *frame)
{
    sl_eviction_header_t e;
    if (sl_eviction_header_decode(frame, &e) != 0) {
        sl_reply_drop(s);
        return;
    }
    s->bound = false;
    sl_reply_evict(s, e.client, e.reason, false);
}

/* Whether a reply body says the operation succeeded: a result section of
 * 0, or Logout's empty body. */
static bool reply_ok(uint8_t kind, sl_span_t body)
{
    if (kind == SL_CLUSTER_WAIT_LOGOUT)
        return body.len == 0;
    uint32_t result;
    sl_span_t payload;
    return sl_result_split(body, &result, &payload) == 0 && result == 0;
}

static void deliver_reply(const sl_cluster_t *c, sl_session_t *s, uint8_t kind, const uint8_t *frame,
                          uint32_t size)
{
    sl_reply_header_t h;
    if (sl_reply_header_decode(frame, c->srv->frame_max, &h) != 0 || h.size != size) {
        sl_log_error("connection %u: the replica's reply does not decode", s->id);
        sl_reply_result(s, &s->vsr_req, s->vsr_req.operation, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    sl_span_t body = sl_span(frame + SL_HEADER_SIZE, size - SL_HEADER_SIZE);
    bool ok = h.op != 0 && reply_ok(kind, body);
    if (kind == SL_CLUSTER_WAIT_REGISTER && ok)
        sl_admit_register_done(s, h.client, h.op);
    if (kind == SL_CLUSTER_WAIT_LOGOUT && ok) {
        sl_log_info("connection %u: user %u logged out", s->id, s->user_id);
        s->bound = false;
    }
    /* The loop writes the reply after this returns: the bytes go where the
     * session keeps them until on_sent (the replica reuses its buffer). */
    sl_buf_reset(&s->reply_body);
    sl_put_span(&s->reply_body, body);
    if (kind == SL_CLUSTER_WAIT_META && ok && h.operation == SL_OP_CREATE_PERSONAL_ACCESS_TOKEN &&
        s->vsr_token[0]) {
        /* The raw token never entered the replicated state: only this node,
         * which admitted the request, can add it. */
        sl_create_personal_access_token_reply_t r = {.token = sl_span_str(s->vsr_token)};
        if (sl_create_personal_access_token_reply_encode(&s->reply_body, &r) != 0)
            sl_log_error("connection %u: token reply did not encode", s->id);
    }
    if (!sl_buf_ok(&s->reply_body)) {
        sl_reply_result(s, &s->vsr_req, h.operation, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    sl_reply_frame(s, &h, sl_buf_span(&s->reply_body));
}

static void bus_reply(void *ctx, sl_u128_t client, const uint8_t *frame, uint32_t size)
{
    sl_cluster_t *c = ctx;
    if (size < SL_HEADER_SIZE)
        return;
    sl_session_t *s = sl_cluster_waiting_session(c, client, frame);
    if (s && s->vsr_wait == SL_CLUSTER_WAIT_PARTITION)
        return; /* not this group's request */
    if (!s) {
        /* A backup's forward, or a connection that is gone (or an internal
         * operation): nobody here to tell. */
        sl_cluster_forward_reply(c, client, frame, size);
        return;
    }
    uint8_t kind = s->vsr_wait;
    s->vsr_wait = SL_CLUSTER_WAIT_NONE;
    if (frame[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION)
        deliver_eviction(s, frame);
    else
        deliver_reply(c, s, kind, frame, size);
    explicit_bzero(s->vsr_token, sizeof(s->vsr_token));
}

/* --- inputs ---------------------------------------------------------------------------- */

static void write_done(void *ctx, uint32_t slot, bool ok)
{
    sl_cluster_t *c = ctx;
    sl_vsr_replica_write_done(c->replica, slot, ok);
}

/* After every call into the replica: one fdatasync makes its journal writes
 * durable, then it hears of them. A completion may submit more writes (a
 * repaired prepare): polled again, a bounded number of times; what is left
 * goes with the next call's poll. */
void sl_cluster_complete_writes(sl_cluster_t *c)
{
    for (int i = 0; i < 8 && sl_vsr_storage_poll(c->store, c, write_done) > 0; i++)
        continue;
}

/* Where the `group` field of each consensus command lies (cluster.md 5-9;
 * vsr/frame.c reads the same offsets); 0: the command carries none. */
static uint32_t group_offset(uint8_t command)
{
    switch (command) {
    case SL_VSR_PREPARE:
    case SL_VSR_REPAIR_PREPARE:
        return 216;
    case SL_VSR_PREPARE_OK:
        return 200;
    case SL_VSR_COMMIT:
        return 168;
    case SL_VSR_START_VIEW_CHANGE:
    case SL_VSR_REQUEST_START_VIEW:
        return 128;
    case SL_VSR_DO_VIEW_CHANGE:
    case SL_VSR_START_VIEW:
    case SL_VSR_REQUEST_STATE_TRANSFER:
        return 144;
    case SL_VSR_REQUEST_PREPARES:
        return 160;
    case SL_VSR_REPAIR_DONE:
    case SL_VSR_RANGE_EVICTED:
    case SL_VSR_STATE_TRANSFER_TARGET:
    case SL_VSR_REQUEST_STATE_CHUNK:
    case SL_VSR_STATE_CHUNK:
        return 152;
    default:
        return 0;
    }
}

static void on_one_frame(void *ctx, uint8_t peer, const uint8_t *frame, uint32_t len)
{
    sl_cluster_t *c = ctx;
    /* The bus checked the sender against the frame's replica field and
     * decoded the frame whole, so the header is all there. */
    uint8_t command = frame[SL_HDR_OFF_COMMAND];
    if (command >= SL_VSR_FORWARD_REGISTER && command <= SL_VSR_FORWARD_LOGOUT_RESULT) {
        sl_cluster_forward_in(c, peer, frame, len);
        sl_cluster_complete_writes(c);
        return;
    }
    uint32_t at = group_offset(command);
    uint64_t group = at != 0 && len >= SL_HEADER_SIZE ? sl_load_u64(frame + at)
                                                      : SL_VSR_GROUP_METADATA;
    if (!sl_vsr_group_is_metadata(group)) {
        SL_TRIP_FRAME("loop_in", frame, len);
        sl_cluster_pgroup_frame(c, group, frame, len);
        SL_TRIP_FRAME("loop_done", frame, len);
        return;
    }
    sl_vsr_replica_on_frame(c->replica, frame, len);
    sl_cluster_complete_writes(c);
}

void sl_cluster_on_frames(void *ctx, struct sl_loop *loop)
{
    (void)loop;
    sl_server_t *srv = ctx;
    sl_replica_plane_drain(srv->cluster->plane, on_one_frame, srv->cluster);
}

/* The root user of a fresh cluster (defaults.md 2): created once, through
 * the group, by the primary, as an internal operation (client 0). Every
 * node was given the same credentials (sl_cluster_open checks they were
 * given). Hashing takes the loop thread for one Argon2id: once per cluster. */
static void root_due(sl_cluster_t *c, const sl_vsr_info_t *info)
{
    sl_server_t *srv = c->srv;
    if (!info->primary || info->commit_min != info->commit_max ||
        sl_meta_user_by_id(srv->meta, 0) != NULL ||
        (c->root_tick != 0 && c->ticks - c->root_tick < SL_CLUSTER_ROOT_RETRY_TICKS))
        return;
    c->root_tick = c->ticks;
    const char *username = srv->cfg.root.username[0] ? srv->cfg.root.username : "iggy";
    char phc[SL_PASSWORD_HASH_MAX];
    if (sl_password_hash(sl_span_str(srv->cfg.root.password), phc) != 0) {
        sl_log_error("cluster: cannot hash the root password");
        return;
    }
    sl_buf_t body;
    sl_buf_init(&body, 0);
    sl_meta_entry_t e;
    if (sl_meta_root_entry(&body, sl_span_str(username), sl_span_str(phc), 0, 0, &e) == 0) {
        sl_vsr_request_t r = {.operation = e.operation, .user_id = 0, .body = e.body};
        sl_vsr_replica_request(c->replica, &r);
        sl_cluster_complete_writes(c);
        sl_log_info("cluster: primary of view %u: creating the root user '%s'", info->view,
                    username);
    }
    sl_buf_free(&body);
    explicit_bzero(phc, sizeof(phc));
}

/* Once the metadata applied is at least what it was before the restart,
 * the boot sync runs again with its sweep: directories meta still does not
 * know are leftovers of a delete cut by a crash. */
static void replay_due(sl_cluster_t *c, const sl_vsr_info_t *info)
{
    sl_server_t *srv = c->srv;
    if (!srv->partitions.keep_unknown || info->commit_min < c->replay_until)
        return;
    srv->partitions.keep_unknown = false;
    sl_partitions_sync(&srv->partitions, srv->meta, true);
    sl_cluster_pgroups_sync(c, false);
    sl_log_info("cluster: metadata replayed to op %llu: partition directories swept",
                (unsigned long long)c->replay_until);
}

void sl_cluster_on_timer(void *ctx, struct sl_loop *loop)
{
    (void)loop;
    sl_server_t *srv = ctx;
    sl_cluster_t *c = srv->cluster;
    c->ticks++;
    sl_vsr_replica_tick(c->replica, sl_clock_realtime_us());
    sl_cluster_complete_writes(c);
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    root_due(c, &info);
    replay_due(c, &info);
    sl_cluster_forward_tick(c);
    sl_cluster_pgroups_tick(c, info.primary);
}

void sl_cluster_submit(sl_cluster_t *c, sl_session_t *s, const sl_request_header_t *req,
                       uint8_t kind, uint8_t operation, uint32_t user_id, sl_span_t body)
{
    sl_assert(s->vsr_wait == SL_CLUSTER_WAIT_NONE);
    if (body.len > SL_CLUSTER_META_BODY_MAX) {
        /* Its prepare would not fit a journal slot (cluster_internal.h). */
        sl_log_warn("cluster: a metadata request of %zu bytes refused: the metadata group "
                    "takes at most %u",
                    body.len, SL_CLUSTER_META_BODY_MAX);
        sl_reply_result(s, req, operation, SL_ERR_INVALID_FORMAT);
        return;
    }
    s->vsr_req = *req;
    s->vsr_nonce = (sl_u128_t){0, 0};
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    if (!info.primary && kind != SL_CLUSTER_WAIT_META) {
        sl_cluster_forward_out(c, s, kind);
        return;
    }
    s->vsr_wait = kind;
    sl_vsr_request_t r = {.client = req->client,
                          .session = kind == SL_CLUSTER_WAIT_REGISTER ? 0 : req->session,
                          .request = req->request,
                          .request_checksum = req->request_checksum,
                          .operation = operation,
                          .user_id = user_id,
                          .timestamp = req->timestamp,
                          .body = body};
    /* The answer may come from inside this call (a refusal, a cached reply). */
    sl_vsr_replica_request(c->replica, &r);
    sl_cluster_complete_writes(c);
}

void sl_cluster_submit_disconnect(sl_cluster_t *c, sl_u128_t client, uint64_t session,
                                  uint32_t user_id)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    if (!info.primary) {
        sl_cluster_forward_disconnect(c, client, session);
        return;
    }
    sl_vsr_request_t r = {.client = client,
                          .session = session,
                          .request = UINT64_MAX,
                          .operation = SL_OP_LOGOUT,
                          .user_id = user_id};
    sl_vsr_replica_request(c->replica, &r);
    sl_cluster_complete_writes(c);
}

/* --- observation ------------------------------------------------------------------------ */

uint32_t sl_cluster_nodes(const sl_cluster_t *c, sl_cluster_node_view_t *out, uint32_t max)
{
    const sl_config_t *cfg = &c->srv->cfg;
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    bool known = info.status == SL_VSR_STATUS_NORMAL;
    uint32_t primary = info.view % c->vcfg.replica_count;
    uint32_t n = 0;
    for (uint32_t i = 0; i < cfg->cluster.nodes_count && n < max; i++) {
        uint32_t id = cfg->cluster.nodes[i].replica_id;
        out[n++] = (sl_cluster_node_view_t){
            .index = i,
            .leader = known && id == primary,
            .reachable = id == c->vcfg.replica || sl_replica_plane_link_up(c->plane, (uint8_t)id),
        };
    }
    return n;
}

int sl_cluster_inbox_fd(const sl_cluster_t *c)
{
    return sl_replica_plane_event_fd(c->plane);
}

int sl_cluster_timer_fd(const sl_cluster_t *c)
{
    return c->timer_fd;
}

/* --- life cycle ------------------------------------------------------------------------- */

/* docs/cluster.md, "Data directories": a data directory a single-node
 * sluiced wrote metadata to is refused, not imported. */
static int check_datadir(const sl_config_t *cfg, char *err, size_t err_len)
{
    static const char *const files[] = {"superblock.a", "superblock.b", "journal.wal"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[PATH_MAX + 32];
        struct stat st;
        int n = snprintf(path, sizeof(path), "%s/%s/%s", cfg->system.path, SL_META_DIR, files[i]);
        if (n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0) {
            snprintf(err, err_len,
                     "cluster mode: %s holds the metadata of a single-node server (%s): cluster "
                     "mode does not import it; start the node on an empty data directory, or "
                     "without [cluster]",
                     cfg->system.path, path);
            return -SL_ERR_INVALID_CONFIGURATION;
        }
    }
    return 0;
}

static int check_config(const sl_config_t *cfg, char *err, size_t err_len)
{
    if (cfg->system.encryption.enabled) {
        snprintf(err, err_len,
                 "cluster mode with system.encryption.enabled is not supported yet: the "
                 "replicated metadata travels and is kept unencrypted (docs/cluster.md)");
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    if (!cfg->root.password[0]) {
        snprintf(err, err_len,
                 "cluster mode needs the root credentials given (IGGY_ROOT_USERNAME and "
                 "IGGY_ROOT_PASSWORD, or --with-default-root-credentials), the same on every "
                 "node: a generated password would differ from node to node");
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    if (cfg->cluster.nodes_count < 2) {
        /* The core does not commit a lone replica's journaled tail after a
         * restart (sl_vsr_replica_open skips a restarted primary's view
         * change): refused rather than acknowledge what a restart drops. */
        snprintf(err, err_len,
                 "cluster mode needs a roster of at least 2 nodes (this one has %u): for one "
                 "node run sluiced without [cluster] (docs/cluster.md)",
                 (unsigned)cfg->cluster.nodes_count);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    return check_datadir(cfg, err, err_len);
}

static int start_timer(sl_cluster_t *c, char *err, size_t err_len)
{
    c->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    struct itimerspec its = {.it_interval = {0, SL_CLUSTER_TICK_MS * 1000000L},
                             .it_value = {0, SL_CLUSTER_TICK_MS * 1000000L}};
    if (c->timer_fd < 0 || timerfd_settime(c->timer_fd, 0, &its, NULL) != 0) {
        snprintf(err, err_len, "cluster: cannot create the tick timer: %s", strerror(errno));
        return -SL_ERR_ERROR;
    }
    return 0;
}

/* The metadata group's storage: <data_dir>/metadata/replica/ (vsr_storage.h). */
static int open_storage(sl_cluster_t *c, char *err, size_t err_len)
{
    const char *root = c->srv->cfg.system.path;
    char dir[PATH_MAX];
    int n = snprintf(dir, sizeof(dir), "%s/%s", root, SL_META_DIR);
    if (n < 0 || (size_t)n >= sizeof(dir) - sizeof("/replica")) {
        snprintf(err, err_len, "cluster: the data directory path is too long: %s", root);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, err_len, "cluster: cannot create %s: %s", dir, strerror(errno));
        return -SL_ERR_CANNOT_CREATE_BASE_DIRECTORY;
    }
    snprintf(dir + n, sizeof(dir) - (size_t)n, "/replica");
    sl_vsr_storage_options_t o = {
        .cluster = c->vcfg.cluster,
        .group = c->vcfg.group,
        .slot_count = c->vcfg.journal_slots,
        .slot_size = sl_vsr_storage_slot_size(SL_CLUSTER_PREPARE_MAX),
        .artifact_max = c->vcfg.state_max,
    };
    return sl_vsr_storage_open(dir, &o, &c->store, err, err_len);
}

/* docs/cluster.md, "Formatting": a node with a state record recovers from
 * it; one without formats only when told (--format-cluster, a new cluster's
 * first start). Otherwise its disk may have been wiped after it voted or
 * acknowledged: it starts as a lost disk (the core rejoins it without
 * voting until a quorum told it the view) and catches up by repair or state
 * transfer. */
static int format_if_told(sl_cluster_t *c, const sl_vsr_storage_t *storage, char *err,
                          size_t err_len)
{
    bool has_state = storage->read_state(storage->ctx).len != 0;
    if (has_state) {
        sl_log_info("cluster: metadata replica recovers from its journal and state record");
        return 0;
    }
    if (!c->srv->cfg.format_cluster) {
        sl_log_warn("cluster: no consensus state in %s/%s/replica and no --format-cluster: "
                    "starting as a lost disk (no vote until it has caught up from a quorum)",
                    c->srv->cfg.system.path, SL_META_DIR);
        return 0;
    }
    if (sl_vsr_replica_format(&c->vcfg, storage) != 0) {
        snprintf(err, err_len, "cluster: cannot format the replica's storage");
        return -SL_ERR_ERROR;
    }
    sl_log_info("cluster: metadata replica formatted (--format-cluster)");
    return 0;
}

static int open_replica(sl_cluster_t *c, char *err, size_t err_len)
{
    const char *why = NULL;
    if (sl_vsr_config_check(&c->vcfg, &why) != 0) {
        snprintf(err, err_len, "cluster: consensus settings refused: %s", why ? why : "?");
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    int rc = open_storage(c, err, err_len);
    if (rc != 0)
        return rc;
    sl_vsr_storage_t storage = sl_vsr_storage_interface(c->store);
    sl_vsr_bus_t bus = {.ctx = c, .send = bus_send, .reply = bus_reply, .trace = bus_trace};
    sl_vsr_machine_t machine = {.ctx = c,
                                .apply = machine_apply,
                                .snapshot = machine_snapshot,
                                .restore = machine_restore,
                                .reset = machine_reset};
    rc = format_if_told(c, &storage, err, err_len);
    if (rc != 0)
        return rc;
    c->booting = true;
    rc = sl_vsr_replica_open(&c->vcfg, &storage, &bus, &machine, &c->replica);
    c->booting = false;
    if (rc != 0) {
        snprintf(err, err_len, "cluster: cannot open the metadata replica");
        return -SL_ERR_ERROR;
    }
    /* Ops up to the journal's head may have been applied before a restart
     * (machine_apply replays them with the boot sync of the partitions). */
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    c->replay_until = info.op;
    return 0;
}

int sl_cluster_open(sl_server_t *srv, char *err, size_t err_len)
{
    const sl_config_t *cfg = &srv->cfg;
    int rc = check_config(cfg, err, err_len);
    if (rc != 0)
        return rc;
    sl_cluster_t *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, err_len, "cluster: out of memory");
        return -SL_ERR_ERROR;
    }
    c->srv = srv;
    c->timer_fd = -1;
    srv->cluster = c;
    /* Segment files and deletions follow the groups' logs (docs/cluster.md,
     * "Segments and retention"). */
    srv->partitions.replicated = true;
    const sl_config_cluster_node_t *self = sl_config_cluster_self(cfg);
    sl_assert(self != NULL);
    sl_vsr_config_defaults(&c->vcfg, (uint8_t)self->replica_id, (uint8_t)cfg->cluster.nodes_count);
    c->vcfg.cluster = sl_vsr_cluster_id(sl_span_str(cfg->cluster.name));
    c->vcfg.frame_max = srv->frame_max;
    /* cluster.heartbeat_timeout and commit_broadcast_interval, in ticks: a
     * view change gives up after a heartbeat timeout too, and unanswered
     * prepares and votes are resent at the heartbeat's pace. */
    uint64_t tick_us = SL_CLUSTER_TICK_MS * 1000u;
    c->vcfg.heartbeat_timeout_ticks = (uint32_t)(cfg->cluster.heartbeat_timeout_us / tick_us);
    c->vcfg.view_change_timeout_ticks = c->vcfg.heartbeat_timeout_ticks;
    c->vcfg.commit_interval_ticks =
        (uint32_t)((cfg->cluster.commit_broadcast_interval_us + tick_us - 1) / tick_us);
    c->vcfg.resend_ticks = c->vcfg.commit_interval_ticks;
    if (getrandom(&c->vcfg.nonce_seed, sizeof(c->vcfg.nonce_seed), 0) !=
        (ssize_t)sizeof(c->vcfg.nonce_seed))
        c->vcfg.nonce_seed = sl_clock_realtime_us() ^ (uint64_t)getpid();
    rc = sl_replica_plane_start(cfg, &c->plane, err, err_len);
    if (rc == 0)
        rc = open_replica(c, err, err_len);
    if (rc == 0)
        rc = start_timer(c, err, err_len);
    if (rc != 0)
        return rc; /* sl_server_close frees what was made */
    /* Until the replay is over, meta is behind the partition directories:
     * nothing it does not know yet is swept (replay_due). */
    srv->partitions.keep_unknown = c->replay_until > 0;
    /* Purges reach the partitions through their groups' logs only. */
    srv->partitions.purge_by_groups = true;
    sl_partitions_sync(&srv->partitions, srv->meta, true);
    sl_cluster_pgroups_sync(c, true);
    sl_log_info("cluster: metadata replica %u of %u opened on %s/%s/replica: heartbeat timeout "
                "%u ms, commit every %u ms",
                c->vcfg.replica, c->vcfg.replica_count, cfg->system.path, SL_META_DIR,
                c->vcfg.heartbeat_timeout_ticks * SL_CLUSTER_TICK_MS,
                c->vcfg.commit_interval_ticks * SL_CLUSTER_TICK_MS);
    return 0;
}

void sl_cluster_close(sl_cluster_t *c)
{
    if (!c)
        return;
    sl_log_info("cluster: %llu partition-plane frames dropped for groups this node lacks",
                (unsigned long long)c->pframes_unknown);
    /* The replicas first: their buses send through the plane. */
    sl_cluster_pgroups_close(c);
    if (c->replica)
        sl_vsr_replica_close(c->replica);
    sl_replica_plane_stop(c->plane);
    if (c->store)
        sl_vsr_storage_close(c->store);
    if (c->timer_fd >= 0)
        close(c->timer_fd);
    free(c);
}

bool sl_cluster_primary_view(const sl_cluster_t *c, uint32_t *view)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    *view = info.view;
    return info.primary;
}

bool sl_cluster_ready(const sl_cluster_t *c)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    return info.commit_min > 0;
}
