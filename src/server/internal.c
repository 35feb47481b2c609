/* The internal-only commands of the HTTP door's connections (internal.h):
 * binding a session to a user the HTTP side authenticated by JWT, resolving
 * a raw personal access token, and the metrics scrape. */
#include <sluice/error.h>
#include <string.h>

#include "auth/secret.h"
#include "base/clock.h"
#include "server/internal.h"
#include "server/metrics.h"
#include "server/server.h"

static void reply_identity(sl_session_t *s, const sl_request_header_t *req, const sl_meta_user_t *u)
{
    sl_buf_reset(&s->reply_body);
    sl_put_u32(&s->reply_body, u->id);
    sl_put_u64(&s->reply_body, u->created_at);
    sl_reply_body(s, req, SL_OP_NON_REPLICATED);
}

static void resolve_pat(sl_session_t *s, const sl_request_header_t *req, sl_span_t token)
{
    char digest[SL_TOKEN_DIGEST_LEN];
    sl_token_digest(token, digest);
    const sl_meta_user_t *u = NULL;
    const sl_meta_token_t *tok =
        sl_meta_token_by_digest(s->server->meta, sl_span(digest, SL_TOKEN_DIGEST_LEN - 1), &u);
    uint64_t now = sl_clock_realtime_us();
    if (!tok || !u || (tok->expiry_at != 0 && tok->expiry_at <= now)) {
        sl_reply_status(s, req, SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN);
        return;
    }
    if (u->status != SL_USER_ACTIVE) {
        sl_reply_status(s, req, SL_ERR_USER_INACTIVE);
        return;
    }
    reply_identity(s, req, u);
}

static void bind_user(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    sl_reader_t r = sl_reader(body);
    uint32_t user_id = 0;
    uint64_t created_at = 0;
    if (!sl_read_u32(&r, &user_id) || !sl_read_u64(&r, &created_at)) {
        sl_reply_status(s, req, SL_ERR_INVALID_COMMAND);
        return;
    }
    sl_admit_register_internal(s, req, user_id, created_at);
}

static void whoami(sl_session_t *s, const sl_request_header_t *req)
{
    const sl_meta_user_t *u = s->bound ? sl_meta_user_by_id(s->server->meta, s->user_id) : NULL;
    if (!u) {
        sl_reply_status(s, req, SL_ERR_UNAUTHENTICATED);
        return;
    }
    reply_identity(s, req, u);
}

void sl_internal_handle(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    sl_assert(s->internal);
    switch (req->code) {
    case SL_INTERNAL_BIND:
        bind_user(s, req, body);
        return;
    case SL_INTERNAL_RESOLVE_PAT:
        resolve_pat(s, req, body);
        return;
    case SL_INTERNAL_WHOAMI:
        whoami(s, req);
        return;
    case SL_INTERNAL_METRICS:
        sl_buf_reset(&s->reply_body);
        sl_metrics_render(s->server, &s->reply_body);
        sl_reply_body(s, req, SL_OP_NON_REPLICATED);
        return;
    default:
        sl_reply_status(s, req, SL_ERR_INVALID_COMMAND);
        return;
    }
}
