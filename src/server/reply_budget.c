/* The bytes replies hold until they are written, bounded across the server
 * by message_bus.reply_memory_max, so clients that poll and never read
 * cannot pin the server's memory (issue 9).
 *
 * What counts: each session's reply buffer at its capacity, once that is
 * above SL_REPLY_UNCOUNTED (smaller ones are part of what every connection
 * costs), while a reply in it is being written and while it is kept for the
 * next reply. A poll fills at most what the budget grants it and stops
 * before a record that does not fit (a poll may return fewer messages than
 * it asked for); when not even one fits, the poll is parked and resumed,
 * oldest first, when a reply is written or a connection closes. Buffers
 * kept idle are freed when a poll needs their bytes. A client that never
 * reads its reply is closed after tcp.reply_timeout (the loop), which
 * releases its bytes, so a parked poll always gets its turn.
 *
 * Replies other than polls (metadata lists, GetSnapshot) are sized by the
 * server's own state rather than by the request: they are counted when
 * built (reads.c) and may take the count past the cap until written; polls
 * then wait. */
#include <sluice/error.h>

#include "base/log.h"
#include "server/server.h"

/* A reply buffer up to this size is kept between replies (counted), so a
 * consumer polling 1 MiB batches does not allocate one per poll. */
#define SESSION_BUFFER_KEEP (1024u * 1024u)

static size_t charge_of(const sl_session_t *s)
{
    return s->reply_body.cap > SL_REPLY_UNCOUNTED ? s->reply_body.cap : 0;
}

void sl_reply_budget_account(sl_session_t *s)
{
    sl_server_t *srv = s->server;
    size_t now = charge_of(s);
    sl_assert(srv->reply_held >= s->reply_charge);
    if (now < s->reply_charge)
        srv->reply_released = true;
    srv->reply_held = srv->reply_held - s->reply_charge + now;
    s->reply_charge = now;
}

static void buffer_drop(sl_session_t *s)
{
    size_t max = s->reply_body.max;
    sl_buf_free(&s->reply_body);
    sl_buf_init(&s->reply_body, max);
    sl_reply_budget_account(s);
}

/* Frees the buffers other sessions keep between replies until need bytes
 * are left beside keep's own. A buffer is idle unless a reply in it is
 * being written: a session waiting for the hash pool, a group commit or
 * the budget has not built its reply yet (dispatch emptied the buffer). */
static void reclaim(sl_server_t *srv, const sl_session_t *keep, uint64_t need)
{
    uint64_t max = srv->cfg.message_bus.reply_memory_max;
    for (uint32_t i = 0; i < srv->sessions_count; i++) {
        if (srv->reply_held - keep->reply_charge + need <= max)
            return;
        sl_session_t *o = srv->sessions[i];
        if (o == keep || o->reply_charge == 0 || sl_conn_replying(o->conn))
            continue;
        buffer_drop(o);
    }
}

size_t sl_reply_budget_grant(sl_session_t *s, size_t want)
{
    sl_server_t *srv = s->server;
    uint64_t max = srv->cfg.message_bus.reply_memory_max;
    size_t grant = s->reply_charge > SL_REPLY_UNCOUNTED ? s->reply_charge : SL_REPLY_UNCOUNTED;
    /* Nobody overtakes a waiting poll with counted bytes. */
    if (srv->parked_head == NULL || srv->resuming == s) {
        reclaim(srv, s, want);
        uint64_t others = srv->reply_held - s->reply_charge;
        uint64_t left = max > others ? max - others : 0;
        if (left > grant)
            grant = left > want ? want : (size_t)left;
    }
    return grant < want ? grant : want;
}

void sl_reply_budget_park(sl_session_t *s, const sl_request_header_t *req, sl_span_t body)
{
    sl_server_t *srv = s->server;
    sl_assert(!s->poll_parked);
    s->poll_parked = true;
    s->parked_req = *req;
    s->parked_body = body;
    if (srv->resuming == s) {
        /* It was first in line and still is. */
        s->parked_next = srv->parked_head;
        srv->parked_head = s;
        if (!srv->parked_tail)
            srv->parked_tail = s;
    } else {
        s->parked_next = NULL;
        if (srv->parked_tail)
            srv->parked_tail->parked_next = s;
        else
            srv->parked_head = s;
        srv->parked_tail = s;
    }
    srv->parked_count++;
    sl_log_debug("connection %u: poll %s: %llu of %llu reply bytes held, %u polls waiting", s->id,
                 srv->resuming == s ? "still waits" : "parked", (unsigned long long)srv->reply_held,
                 (unsigned long long)srv->cfg.message_bus.reply_memory_max, srv->parked_count);
}

/* Takes s out of the line, wherever it stands. Bounded by the line. */
static void unpark(sl_session_t *s)
{
    sl_server_t *srv = s->server;
    if (!s->poll_parked)
        return;
    sl_session_t *prev = NULL, *at = srv->parked_head;
    for (uint32_t i = 0; i < srv->parked_count && at && at != s; i++) {
        prev = at;
        at = at->parked_next;
    }
    sl_assert(at == s);
    if (!prev)
        srv->reply_released = true; /* the next in line may fit where s did not */
    if (prev)
        prev->parked_next = s->parked_next;
    else
        srv->parked_head = s->parked_next;
    if (srv->parked_tail == s)
        srv->parked_tail = prev;
    s->parked_next = NULL;
    s->poll_parked = false;
    srv->parked_count--;
}

void sl_reply_budget_resume(sl_server_t *srv)
{
    if (srv->resuming || !srv->parked_head || !srv->reply_released)
        return;
    /* A resumed poll sees what every poll sees: staged sends made durable. */
    sl_messages_commit_staged(srv);
    const uint32_t bound = srv->parked_count;
    for (uint32_t i = 0; i < bound && srv->parked_head; i++) {
        sl_session_t *s = srv->parked_head;
        unpark(s);
        if (sl_conn_closing(s->conn))
            continue; /* its on_close follows; nobody reads an answer */
        srv->resuming = s;
        sl_messages_poll_resume(s);
        srv->resuming = NULL;
        if (s->poll_parked)
            break; /* still does not fit: those behind it wait too */
    }
    /* Until more comes back, trying again would find the same. */
    srv->reply_released = false;
}

void sl_reply_budget_sent(sl_session_t *s)
{
    sl_reply_budget_account(s);
    /* A large buffer is not kept idle, nor any counted one while polls wait
     * for bytes. */
    if (s->reply_body.cap > SESSION_BUFFER_KEEP || (s->reply_charge && s->server->parked_head))
        buffer_drop(s);
    sl_reply_budget_resume(s->server);
}

void sl_reply_budget_close(sl_session_t *s)
{
    unpark(s);
    buffer_drop(s);
    sl_reply_budget_resume(s->server);
}
