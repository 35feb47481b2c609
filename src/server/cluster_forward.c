/* Session forwarding (shared/protocol/cluster.md 10): a client logged in on
 * a backup. The backup checks the credentials itself and sends only the
 * verified identity (ForwardRegister: client, nonce, user id) to the
 * primary, which submits the Register on the client's behalf and answers
 * with ForwardRegisterResult (the committed session); the backup then
 * answers its client. Logout the same way with ForwardLogout. A forward
 * that gets no answer within SL_CLUSTER_FORWARD_TIMEOUT_TICKS gets the
 * client the transient answer 58 (lifecycle.md), and it re-issues. */
#include <sluice/error.h>
#include <string.h>

#include "base/log.h"
#include "meta/admit.h"
#include "server/cluster_internal.h"
#include "wire/codec.h"

static void send_frame(sl_cluster_t *c, uint8_t peer, sl_vsr_frame_t *f)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    f->h.cluster = c->vcfg.cluster;
    f->h.view = info.view;
    f->h.replica = c->vcfg.replica;
    uint8_t hdr[SL_HEADER_SIZE];
    sl_vsr_header_encode(hdr, f, sl_span(NULL, 0));
    sl_replica_plane_send(c->plane, peer, hdr, SL_HEADER_SIZE);
}

/* --- the backup's side ------------------------------------------------------------------ */

static sl_u128_t next_nonce(sl_cluster_t *c)
{
    /* The seed makes a restarted node's nonces differ from its last run's. */
    c->nonce_next++;
    return (sl_u128_t){c->vcfg.nonce_seed | 1u, c->nonce_next};
}

void sl_cluster_forward_out(sl_cluster_t *c, sl_session_t *s, uint8_t kind)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    s->vsr_wait = kind;
    if (info.status != SL_VSR_STATUS_NORMAL) {
        /* No primary known: the client re-issues later. */
        s->vsr_wait = SL_CLUSTER_WAIT_NONE;
        sl_reply_result(s, &s->vsr_req, s->vsr_req.operation, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        return;
    }
    s->vsr_nonce = next_nonce(c);
    s->vsr_tick = c->ticks;
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    if (kind == SL_CLUSTER_WAIT_REGISTER) {
        f.h.command = SL_VSR_FORWARD_REGISTER;
        f.u.forward_register = (sl_vsr_forward_register_t){
            .client = s->vsr_req.client, .nonce = s->vsr_nonce, .user_id = s->vsr_user_id};
    } else {
        f.h.command = SL_VSR_FORWARD_LOGOUT;
        f.u.forward_logout = (sl_vsr_forward_logout_t){.client = s->vsr_req.client,
                                                       .nonce = s->vsr_nonce,
                                                       .session = s->epoch,
                                                       .request = s->vsr_req.request};
    }
    send_frame(c, (uint8_t)(info.view % c->vcfg.replica_count), &f);
}

void sl_cluster_forward_disconnect(sl_cluster_t *c, sl_u128_t client, uint64_t session)
{
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    if (info.status != SL_VSR_STATUS_NORMAL || session == 0)
        return; /* the client table's capacity eviction ends the entry one day */
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_FORWARD_LOGOUT;
    f.u.forward_logout = (sl_vsr_forward_logout_t){
        .client = client, .nonce = next_nonce(c), .session = session, .request = UINT64_MAX};
    send_frame(c, (uint8_t)(info.view % c->vcfg.replica_count), &f);
}

static sl_session_t *forwarding_session(sl_cluster_t *c, sl_u128_t client, sl_u128_t nonce)
{
    sl_server_t *srv = c->srv;
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        sl_session_t *s = srv->sessions[i];
        if (s->vsr_wait != SL_CLUSTER_WAIT_NONE && !sl_u128_is_zero(s->vsr_nonce) &&
            sl_u128_eq(s->vsr_nonce, nonce) && sl_u128_eq(s->vsr_req.client, client))
            return s;
    }
    return NULL;
}

static void end_wait(sl_session_t *s)
{
    s->vsr_wait = SL_CLUSTER_WAIT_NONE;
    s->vsr_nonce = (sl_u128_t){0, 0};
}

static void on_register_result(sl_cluster_t *c, const sl_vsr_forward_register_result_t *r)
{
    sl_session_t *s = forwarding_session(c, r->client, r->nonce);
    if (!s || s->vsr_wait != SL_CLUSTER_WAIT_REGISTER)
        return; /* late, or not ours */
    end_wait(s);
    if (r->outcome == SL_VSR_FWD_REGISTER_OK && r->epoch != 0) {
        sl_admit_register_forwarded(s, r->epoch);
    } else if (r->outcome == SL_VSR_FWD_REGISTER_CLIENT_OWNED) {
        sl_reply_evict(s, r->client, SL_EVICT_SESSION_ERROR, false);
    } else {
        /* 3 PipelineFull, 4 InProgress: try again; 1 NotPrimary, 5 Canceled: elsewhere. */
        uint32_t code = r->outcome == 3 || r->outcome == 4 ? SL_ERR_TRANSIENT_NOT_COMMITTED
                                                           : SL_ERR_TRANSIENT_NOT_ACCEPTED;
        sl_reply_result(s, &s->vsr_req, SL_OP_REGISTER, code);
    }
}

static void on_logout_result(sl_cluster_t *c, const sl_vsr_forward_logout_result_t *r)
{
    sl_session_t *s = forwarding_session(c, r->client, r->nonce);
    if (!s || s->vsr_wait != SL_CLUSTER_WAIT_LOGOUT)
        return;
    end_wait(s);
    /* 4 Canceled: the group holds no such session any more: it has ended. */
    if (r->outcome == SL_VSR_FWD_LOGOUT_OK || r->outcome == SL_VSR_FWD_LOGOUT_CANCELED) {
        sl_log_info("connection %u: user %u logged out", s->id, s->user_id);
        s->bound = false;
        sl_buf_reset(&s->reply_body);
        sl_reply_body(s, &s->vsr_req, SL_OP_LOGOUT);
        return;
    }
    uint32_t code = r->outcome == 2 || r->outcome == 3 ? SL_ERR_TRANSIENT_NOT_COMMITTED
                                                       : SL_ERR_TRANSIENT_NOT_ACCEPTED;
    sl_reply_status(s, &s->vsr_req, code);
}

void sl_cluster_forward_tick(sl_cluster_t *c)
{
    sl_server_t *srv = c->srv;
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        sl_session_t *s = srv->sessions[i];
        if (s->vsr_wait == SL_CLUSTER_WAIT_NONE || sl_u128_is_zero(s->vsr_nonce) ||
            c->ticks - s->vsr_tick < SL_CLUSTER_FORWARD_TIMEOUT_TICKS)
            continue;
        uint8_t kind = s->vsr_wait;
        end_wait(s);
        sl_log_info("connection %u: the primary did not answer a forwarded %s", s->id,
                    kind == SL_CLUSTER_WAIT_REGISTER ? "login" : "logout");
        if (kind == SL_CLUSTER_WAIT_REGISTER)
            sl_reply_result(s, &s->vsr_req, SL_OP_REGISTER, SL_ERR_TRANSIENT_NOT_ACCEPTED);
        else
            sl_reply_status(s, &s->vsr_req, SL_ERR_TRANSIENT_NOT_ACCEPTED);
    }
    for (uint32_t i = 0; i < SL_CLUSTER_FORWARDS_MAX; i++) {
        sl_cluster_forward_t *f = &c->forwards[i];
        if (f->used && c->ticks - f->tick >= SL_CLUSTER_FORWARD_TIMEOUT_TICKS)
            f->used = false;
    }
}

/* --- the primary's side ----------------------------------------------------------------- */

static void answer_register(sl_cluster_t *c, uint8_t peer, sl_u128_t client, sl_u128_t nonce,
                            uint8_t outcome, uint64_t epoch)
{
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_FORWARD_REGISTER_RESULT;
    f.u.forward_register_result = (sl_vsr_forward_register_result_t){
        .nonce = nonce, .client = client, .epoch = outcome == 0 ? epoch : 0, .outcome = outcome};
    send_frame(c, peer, &f);
}

static void answer_logout(sl_cluster_t *c, uint8_t peer, sl_u128_t client, sl_u128_t nonce,
                          uint8_t outcome, uint64_t commit)
{
    sl_vsr_frame_t f;
    memset(&f, 0, sizeof(f));
    f.h.command = SL_VSR_FORWARD_LOGOUT_RESULT;
    f.u.forward_logout_result = (sl_vsr_forward_logout_result_t){
        .nonce = nonce, .client = client, .commit = outcome == 0 ? commit : 0, .outcome = outcome};
    send_frame(c, peer, &f);
}

static sl_cluster_forward_t *forward_slot(sl_cluster_t *c, sl_u128_t client)
{
    sl_cluster_forward_t *free_slot = NULL;
    for (uint32_t i = 0; i < SL_CLUSTER_FORWARDS_MAX; i++) {
        sl_cluster_forward_t *f = &c->forwards[i];
        if (f->used && sl_u128_eq(f->client, client))
            return f; /* a newer forward of the same client replaces the older */
        if (!f->used && !free_slot)
            free_slot = f;
    }
    return free_slot;
}

/* Submits the forwarded operation; its answer comes back through the bus's
 * reply (sl_cluster_forward_reply), maybe from inside this call. */
static void submit_forward(sl_cluster_t *c, uint8_t peer, uint8_t kind, sl_u128_t client,
                           sl_u128_t nonce, const sl_vsr_request_t *req)
{
    sl_cluster_forward_t *f = forward_slot(c, client);
    if (!f) {
        if (kind == SL_CLUSTER_WAIT_REGISTER)
            answer_register(c, peer, client, nonce, 3, 0); /* PipelineFull */
        else
            answer_logout(c, peer, client, nonce, 2, 0);
        return;
    }
    *f = (sl_cluster_forward_t){true, kind, peer, client, nonce, c->ticks};
    sl_vsr_replica_request(c->replica, req);
    sl_cluster_complete_writes(c);
}

static void on_forward_register(sl_cluster_t *c, uint8_t peer, const sl_vsr_forward_register_t *r)
{
    sl_buf_t body;
    sl_buf_init(&body, 0);
    /* The client's version stays on the backup, which holds its connection. */
    sl_meta_admit_register_t a = {
        .user_id = r->user_id,
        .version = {.protocol_version = SL_PROTOCOL_VERSION,
                    .sdk_name = sl_span_str("forwarded"),
                    .sdk_version = sl_span_str(SL_SERVER_VERSION)}};
    if (sl_meta_admit_register_encode(&body, &a) == 0 && sl_buf_ok(&body)) {
        sl_vsr_request_t req = {.client = r->client,
                                .operation = SL_OP_REGISTER,
                                .user_id = r->user_id,
                                .body = sl_buf_span(&body)};
        submit_forward(c, peer, SL_CLUSTER_WAIT_REGISTER, r->client, r->nonce, &req);
    }
    sl_buf_free(&body);
}

static void on_forward_logout(sl_cluster_t *c, uint8_t peer, const sl_vsr_forward_logout_t *r)
{
    const sl_meta_client_t *mc = sl_meta_client_find(c->srv->meta, r->client);
    if (!mc || mc->epoch != r->session) {
        answer_logout(c, peer, r->client, r->nonce, 4, 0); /* Canceled: no such session */
        return;
    }
    sl_vsr_request_t req = {.client = r->client,
                            .session = r->session,
                            .request = r->request,
                            .operation = SL_OP_LOGOUT,
                            .user_id = mc->user_id};
    submit_forward(c, peer, SL_CLUSTER_WAIT_LOGOUT, r->client, r->nonce, &req);
}

void sl_cluster_forward_in(sl_cluster_t *c, uint8_t peer, const uint8_t *frame, uint32_t len)
{
    sl_vsr_frame_t f;
    if (sl_vsr_frame_decode(frame, len, c->vcfg.frame_max, &f) != SL_VSR_OK ||
        !sl_u128_eq(f.h.cluster, c->vcfg.cluster))
        return; /* the bus decoded it already: cannot happen */
    sl_vsr_info_t info;
    sl_vsr_replica_info(c->replica, &info);
    switch (f.h.command) {
    case SL_VSR_FORWARD_REGISTER:
        if (!info.primary)
            answer_register(c, peer, f.u.forward_register.client, f.u.forward_register.nonce, 1,
                            0);
        else
            on_forward_register(c, peer, &f.u.forward_register);
        return;
    case SL_VSR_FORWARD_LOGOUT:
        if (!info.primary)
            answer_logout(c, peer, f.u.forward_logout.client, f.u.forward_logout.nonce, 1, 0);
        else
            on_forward_logout(c, peer, &f.u.forward_logout);
        return;
    case SL_VSR_FORWARD_REGISTER_RESULT:
        on_register_result(c, &f.u.forward_register_result);
        return;
    case SL_VSR_FORWARD_LOGOUT_RESULT:
        on_logout_result(c, &f.u.forward_logout_result);
        return;
    default:
        return;
    }
}

/* The replica's answer, as a forward's outcome. */
static uint8_t outcome_of(const sl_cluster_t *c, uint8_t kind, const uint8_t *frame, uint32_t size,
                          uint64_t *op)
{
    *op = 0;
    if (frame[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION)
        return kind == SL_CLUSTER_WAIT_REGISTER ? SL_VSR_FWD_REGISTER_CLIENT_OWNED
                                                : SL_VSR_FWD_LOGOUT_CANCELED;
    sl_reply_header_t h;
    if (sl_reply_header_decode(frame, c->srv->frame_max, &h) != 0 || h.size != size)
        return kind == SL_CLUSTER_WAIT_REGISTER ? 5 : 4; /* Canceled */
    sl_span_t body = sl_span(frame + SL_HEADER_SIZE, size - SL_HEADER_SIZE);
    uint32_t result = 0;
    sl_span_t payload;
    bool framed = body.len > 0;
    if (framed && sl_result_split(body, &result, &payload) != 0)
        result = SL_ERR_ERROR;
    if (h.op != 0 && result == 0) {
        *op = h.op;
        return 0;
    }
    bool again = result == SL_ERR_TRANSIENT_NOT_COMMITTED;
    if (kind == SL_CLUSTER_WAIT_REGISTER)
        return again ? 4 : result == SL_ERR_TRANSIENT_NOT_ACCEPTED ? 1 : 5;
    return again ? 3 : result == SL_ERR_TRANSIENT_NOT_ACCEPTED ? 1 : 4;
}

bool sl_cluster_forward_reply(sl_cluster_t *c, sl_u128_t client, const uint8_t *frame,
                              uint32_t size)
{
    sl_cluster_forward_t *f = NULL;
    for (uint32_t i = 0; i < SL_CLUSTER_FORWARDS_MAX && !f; i++) {
        if (c->forwards[i].used && sl_u128_eq(c->forwards[i].client, client))
            f = &c->forwards[i];
    }
    if (!f)
        return false;
    f->used = false;
    uint64_t op;
    uint8_t outcome = outcome_of(c, f->kind, frame, size, &op);
    if (f->kind == SL_CLUSTER_WAIT_REGISTER)
        answer_register(c, f->peer, f->client, f->nonce, outcome, op);
    else
        answer_logout(c, f->peer, f->client, f->nonce, outcome, op);
    return true;
}
