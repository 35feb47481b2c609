/* Shared by the read handlers (reads*.c): the request being answered and
 * the three ways to finish it. Internal to src/server. */
#ifndef SL_SERVER_READS_H
#define SL_SERVER_READS_H

#include <sluice/error.h>

#include "base/log.h"
#include "server/server.h"

typedef struct sl_read {
    sl_session_t *s;
    const sl_request_header_t *req;
    sl_span_t body;
    sl_meta_t *meta;
    sl_buf_t *out; /* the payload being built (the session's reply body) */
} sl_read_t;

/* Sends the payload built in c->out. */
static inline void sl_read_ok(sl_read_t *c)
{
    if (!sl_buf_ok(c->out)) {
        sl_log_error("reply to code %u did not fit", c->req->code);
        sl_reply_status(c->s, c->req, SL_ERR_ERROR);
        return;
    }
    sl_reply_body(c->s, c->req, SL_OP_NON_REPLICATED);
}

/* Answers with a status (either sign accepted). */
static inline void sl_read_status(sl_read_t *c, int code)
{
    sl_reply_status(c->s, c->req, (uint32_t)(code < 0 ? -code : code));
}

/* The read-path permission check; answers 41 itself when refused. */
static inline bool sl_read_allowed(sl_read_t *c, sl_perm_rule_t rule, uint32_t stream_id,
                                   uint32_t topic_id)
{
    if (sl_meta_allow(c->meta, c->s->user_id, rule, stream_id, topic_id))
        return true;
    sl_read_status(c, SL_ERR_UNAUTHORIZED);
    return false;
}

void sl_reads_users(sl_read_t *c);
/* messages.c: PollMessages and GetConsumerOffset. */
void sl_messages_read(sl_read_t *c);
void sl_reads_system(sl_read_t *c);

#endif
