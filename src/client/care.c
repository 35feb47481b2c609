/* Connection care: reconnecting with exponential backoff and logging in
 * again, replaying transient refusals (commands.md 1.7), and the heartbeat
 * of sl_client_tick. The rules are stated in client.h, "Connection care";
 * this file is the policy table of that text and the loop that applies it.
 *
 * Everything runs inside the calls of the one thread that uses the client. */
#include "client/client_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

/* --- settings and credentials --------------------------------------------------------- */

static uint32_t or_default(uint32_t value, uint32_t fallback)
{
    return value ? value : fallback;
}

void sl_client_care_init(sl_client_t *c, const sl_client_options_t *o)
{
    sl_client_care_t *k = &c->care;
    k->reconnect_attempts = o->reconnect_attempts;
    k->reconnect_delay_ms = or_default(o->reconnect_delay_ms, SL_CLIENT_RECONNECT_DELAY_MS_DEFAULT);
    k->reconnect_delay_max_ms =
        or_default(o->reconnect_delay_max_ms, SL_CLIENT_RECONNECT_DELAY_MAX_MS_DEFAULT);
    if (k->reconnect_delay_max_ms < k->reconnect_delay_ms)
        k->reconnect_delay_max_ms = k->reconnect_delay_ms;
    k->transient_retries = o->transient_retries;
    k->transient_delay_ms = or_default(o->transient_delay_ms, SL_CLIENT_TRANSIENT_DELAY_MS_DEFAULT);
    k->heartbeat_interval_ms = o->heartbeat_interval_ms;
    k->settle = o->settle_on_leader != SL_CLIENT_SETTLE_OFF;
    k->last_send_us = sl_clock_monotonic_us();
    sl_buf_init(&k->saved, c->frame_max);
}

bool sl_client_reconnect_on(const sl_client_t *c)
{
    return c->care.reconnect_attempts > 0;
}

bool sl_client_care_on(const sl_client_t *c)
{
    return c->care.reconnect_attempts > 0 || c->care.transient_retries > 0;
}

static void wipe(char **s)
{
    if (*s == NULL)
        return;
    /* A password must not linger in freed memory; explicit_bzero is not
     * optimised away like a memset before free can be. */
    explicit_bzero(*s, strlen(*s));
    free(*s);
    *s = NULL;
}

void sl_client_care_forget(sl_client_t *c)
{
    wipe(&c->care.username);
    wipe(&c->care.password);
    wipe(&c->care.token);
}

static bool remembered(const sl_client_t *c)
{
    return c->care.token != NULL || c->care.username != NULL;
}

int sl_client_care_remember(sl_client_t *c, const char *username, const char *password,
                            const char *token)
{
    sl_client_care_forget(c);
    /* Nothing to log in again for (no reconnects, no re-settlement before
     * a replay): keep no secrets. */
    if (!sl_client_reconnect_on(c) && !(c->care.settle && c->care.transient_retries > 0))
        return 0;
    sl_client_care_t *k = &c->care;
    bool ok;
    if (token != NULL) {
        ok = (k->token = strdup(token)) != NULL;
    } else {
        k->username = strdup(username);
        k->password = strdup(password);
        ok = k->username != NULL && k->password != NULL;
    }
    if (!ok) {
        sl_client_care_forget(c);
        return -SL_ERR_ERROR;
    }
    return 0;
}

void sl_client_care_free(sl_client_t *c)
{
    sl_client_care_forget(c);
    free(c->care.host);
    c->care.host = NULL;
    sl_buf_free(&c->care.saved);
}

/* --- backoff ---------------------------------------------------------------------------- */

uint32_t sl_client_backoff_ms(uint32_t first_ms, uint32_t max_ms, uint32_t attempt, uint32_t random)
{
    uint64_t d = first_ms;
    /* Doubling stops at the cap, so no shift can overflow. */
    for (uint32_t i = 0; i < attempt && d < max_ms; i++)
        d *= 2;
    if (d > max_ms)
        d = max_ms;
    /* Jitter over the upper half: clients dropped together by one server
     * restart do not all dial again at the same instant, and no wait is
     * shorter than half the schedule. */
    uint64_t half = d / 2;
    return (uint32_t)(d - half + random % (half + 1));
}

static void sleep_ms(sl_client_t *c, uint32_t ms)
{
    if (c->care.sleep != NULL) {
        c->care.sleep(c->care.sleep_ctx, ms);
        return;
    }
    struct timespec ts = {(time_t)(ms / 1000u), (long)(ms % 1000u) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static uint32_t jitter(void)
{
    uint32_t r = 0;
    /* Without randomness the wait is the lower bound: still bounded. */
    if (sl_client_random(&r, sizeof(r)) != 0)
        r = 0;
    return r;
}

/* --- reconnecting ------------------------------------------------------------------------ */

/* The address the attempt-th dial of a recovery goes to: the current one
 * first, then in turn the other nodes the last settlement listed (the
 * current one may be a leader that died); NULL host: the current one. */
static sl_client_address_t *dial_target(sl_client_t *c, uint32_t attempt)
{
    sl_client_care_t *k = &c->care;
    if (k->known_count == 0 || attempt == 0)
        return NULL;
    /* Bounded by known_count: every entry is looked at once at most. */
    for (uint32_t i = 0; i < k->known_count; i++) {
        sl_client_address_t *a = &k->known[(attempt - 1 + i) % k->known_count];
        if (a->port != k->port || !sl_client_same_host(a->host, k->host))
            return a;
    }
    return NULL;
}

/* Dials the attempt-th address of a recovery; *to gets the address when it
 * is not the current one. */
static int dial(sl_client_t *c, uint32_t attempt, int *fd, sl_client_address_t **to)
{
    *to = NULL;
    if (c->care.dial != NULL)
        return c->care.dial(c->care.dial_ctx, fd);
    if (c->care.host == NULL)
        return -SL_ERR_NOT_CONNECTED; /* an adopted socket has no address */
    *to = dial_target(c, attempt);
    if (*to != NULL)
        return sl_client_tcp_connect((*to)->host, (*to)->port, c->connect_timeout_ms, fd);
    return sl_client_tcp_connect(c->care.host, c->care.port, c->connect_timeout_ms, fd);
}

/* After a dial to another node worked: reconnects and TLS names follow it. */
static int adopt_address(sl_client_t *c, const sl_client_address_t *to)
{
    char *host = strdup(to->host);
    if (host == NULL)
        return -SL_ERR_ERROR;
    free(c->care.host);
    c->care.host = host;
    c->care.port = to->port;
    return 0;
}

/* Closes the connection and dials until one attempt works or the attempts
 * run out (at least one), with backoff between them. */
static int redial(sl_client_t *c)
{
    sl_client_disconnect(c);
    uint32_t attempts = c->care.reconnect_attempts ? c->care.reconnect_attempts : 1;
    int rc = -SL_ERR_CANNOT_ESTABLISH_CONNECTION;
    for (uint32_t a = 0; a < attempts; a++) {
        if (a > 0)
            sleep_ms(c, sl_client_backoff_ms(c->care.reconnect_delay_ms,
                                             c->care.reconnect_delay_max_ms, a - 1, jitter()));
        int fd;
        sl_client_address_t *to;
        rc = dial(c, a, &fd, &to);
        if (rc == 0 && to != NULL)
            rc = sl_client_link_open(c, fd, to->host, to->port);
        else if (rc == 0)
            rc = sl_client_link_open(c, fd, c->care.host ? c->care.host : "", c->care.port);
        if (rc == 0 && to != NULL && adopt_address(c, to) != 0) {
            sl_client_disconnect(c);
            return -SL_ERR_ERROR;
        }
        if (rc == 0) {
            c->care.reconnects++;
            return 0;
        }
        if (rc == -SL_ERR_NOT_CONNECTED)
            break; /* nothing to dial */
    }
    return rc;
}

/* Whether the idle connection is gone: the server closed it, reset it, or
 * pushed an eviction (StaleClient) since the last reply. Nothing is read
 * from the stream: a frame other than an eviction is left for the reply
 * reader. Never blocks. */
static bool connection_stale(sl_client_t *c)
{
    if (c->fd < 0)
        return true;
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int n = poll(&p, 1, 0);
    if (n <= 0)
        return false; /* nothing pending (or poll failed: let the send tell) */
    if (p.revents & (POLLERR | POLLNVAL))
        return true;
    uint8_t hdr[SL_HEADER_SIZE];
    int got = sl_client_link_peek(c, hdr, sizeof(hdr));
    if (got < 0)
        return true; /* end of stream or an error */
    /* An eviction nobody asked for ends the session, and the server closes
     * the connection behind it (lifecycle.md 8). */
    return (size_t)got > SL_HDR_OFF_COMMAND && hdr[SL_HDR_OFF_COMMAND] == SL_COMMAND_EVICTION;
}

static bool login_refused(int rc)
{
    /* What the login evictions 9..12, 14, 15 map to: trying again with the
     * same credentials cannot help. */
    return rc == -SL_ERR_INVALID_CREDENTIALS || rc == -SL_ERR_INVALID_PERSONAL_ACCESS_TOKEN ||
           rc == -SL_ERR_UNAUTHENTICATED || rc == -SL_ERR_INCOMPATIBLE_PROTOCOL_VERSION ||
           rc == -SL_ERR_INVALID_FORMAT || rc == -SL_ERR_INVALID_COMMAND;
}

/* Re-login with the remembered credentials; a refusal forgets them. */
static int relogin(sl_client_t *c)
{
    int rc = sl_client_login_again(c);
    if (rc == 0)
        c->care.relogins++;
    else if (login_refused(rc))
        sl_client_care_forget(c);
    const sl_client_care_t *k = &c->care;
    if (rc == 0)
        rc = sl_client_settle(c, k->username, k->password, k->token, NULL);
    return rc;
}

/* The recovery itself: a new connection when this one is gone, and a login
 * when credentials are remembered and no session is bound (never for a
 * Register: that call is the login). The request body in c->tx survives. */
static int recover(sl_client_t *c, uint8_t operation, bool stale)
{
    sl_client_care_t *k = &c->care;
    bool login = operation != SL_OP_REGISTER && remembered(c);
    if (!stale && !(login && c->session.session == 0))
        return 0;
    sl_buf_reset(&k->saved);
    sl_put_bytes(&k->saved, c->tx.data + SL_HEADER_SIZE, c->tx.len - SL_HEADER_SIZE);
    if (!sl_buf_ok(&k->saved))
        return -SL_ERR_ERROR;
    k->recovering = true;
    int rc = stale ? redial(c) : 0;
    if (rc == 0 && login && c->session.session == 0)
        rc = relogin(c);
    k->recovering = false;
    /* The login reused tx; put the request back (its header is rewritten
     * when it is numbered again). */
    sl_client_request_begin(c);
    sl_put_bytes(&c->tx, k->saved.data, k->saved.len);
    if (rc == 0 && !sl_buf_ok(&c->tx))
        rc = -SL_ERR_ERROR;
    if (k->saved.cap > SL_CLIENT_KEEP_BYTES) {
        /* A large batch went through here once; do not pin its copy. */
        sl_buf_free(&k->saved);
        sl_buf_init(&k->saved, c->frame_max);
    }
    return rc;
}

int sl_client_reconnect(sl_client_t *c)
{
    if (sl_client_pipe_busy(c))
        return -SL_ERR_INVALID_COMMAND; /* collect the requests in flight first */
    if (c->batch.open)
        sl_client_send_abandon(c);
    sl_client_call_begin(c);
    return recover(c, 0, true);
}

/* --- the call loop ---------------------------------------------------------------------- */

typedef enum care_step {
    CARE_DONE,    /* return what we have */
    CARE_REPLAY,  /* send the same bytes again on this connection */
    CARE_RECOVER, /* reconnect and/or log in again, then re-issue */
} care_step_t;

/* Operations whose outcome can be asked about again: the metadata plane
 * deduplicates them by (client, request number), framing.md 6.1. */
static bool deduplicated(uint8_t operation)
{
    return sl_op_metadata(operation) || operation == SL_OP_LOGOUT || operation == SL_OP_REGISTER ||
           operation == SL_OP_DELETE_SEGMENTS;
}

/* Operations that may run twice without harm: reads, and a login (a second
 * Register of the same client id rebinds it, lifecycle.md 6). */
static bool reissuable(uint8_t operation)
{
    return operation == SL_OP_NON_REPLICATED || operation == SL_OP_REGISTER;
}

typedef struct care_attempt {
    int rc;
    bool sent;      /* the whole request reached the kernel */
    bool transport; /* the socket failed (the connection is closed) */
    bool had_session;
    const sl_client_reply_t *reply;
} care_attempt_t;

/* A lost session that a re-login repairs: evictions that apply nothing,
 * and a read refused for want of a session the client thought it had. */
static bool session_lost(uint8_t operation, const care_attempt_t *a)
{
    if (a->reply->outcome == SL_CLIENT_REPLY_EVICTED)
        return a->reply->eviction.reason == SL_EVICT_NO_SESSION ||
               a->reply->eviction.reason == SL_EVICT_SESSION_TOO_LOW;
    return operation == SL_OP_NON_REPLICATED && a->had_session &&
           a->rc == -SL_ERR_UNAUTHENTICATED && a->reply->outcome == SL_CLIENT_REPLY_STATUS;
}

static care_step_t classify(sl_client_t *c, uint8_t operation, const care_attempt_t *a)
{
    bool reconnect = sl_client_reconnect_on(c);
    if (a->transport) {
        /* Unsent requests are safe anywhere; sent ones only when harmless.
         * A Logout is complete once the connection is gone: the server ends
         * the session of a closed connection (lifecycle.md 7). */
        if (operation == SL_OP_LOGOUT)
            return CARE_DONE;
        return reconnect && (!a->sent || reissuable(operation)) ? CARE_RECOVER : CARE_DONE;
    }
    if (a->reply->outcome == SL_CLIENT_REPLY_EVICTED &&
        a->reply->eviction.reason == SL_EVICT_STALE_CLIENT) {
        /* The server closes the connection behind it, and the request may
         * have been answered as well: treat it as a failure in flight. */
        sl_client_disconnect(c);
        return reconnect && reissuable(operation) ? CARE_RECOVER : CARE_DONE;
    }
    if (reconnect && operation != SL_OP_REGISTER && operation != SL_OP_LOGOUT && remembered(c) &&
        session_lost(operation, a))
        return CARE_RECOVER;
    if (a->rc == -SL_ERR_TRANSIENT_NOT_ACCEPTED ||
        (a->rc == -SL_ERR_TRANSIENT_NOT_COMMITTED && deduplicated(operation)))
        return c->fd >= 0 ? CARE_REPLAY : CARE_DONE;
    return CARE_DONE;
}

/* recover, with a transient refusal of its re-login replayed as a call's
 * 57/58 is, from the same budget (*replays): during a cluster's failover
 * the node a client reconnects to answers a login 58 until a new primary
 * is elected to forward it to. */
static int recover_patiently(sl_client_t *c, uint8_t operation, bool stale, uint32_t *replays)
{
    for (;;) {
        int rc = recover(c, operation, stale);
        if ((rc != -SL_ERR_TRANSIENT_NOT_ACCEPTED && rc != -SL_ERR_TRANSIENT_NOT_COMMITTED) ||
            *replays >= c->care.transient_retries)
            return rc;
        sleep_ms(c, sl_client_backoff_ms(c->care.transient_delay_ms,
                                         SL_CLIENT_TRANSIENT_DELAY_MAX_MS, *replays, jitter()));
        (*replays)++;
        c->care.replays++;
        stale = c->fd < 0;
    }
}

/* Before sending: a connection lost while idle is replaced, and a session
 * lost earlier is logged in again (only with reconnects on; a Logout is
 * never the reason to reconnect). */
int sl_client_care_prepare(sl_client_t *c, uint8_t operation)
{
    if (!sl_client_reconnect_on(c) || operation == SL_OP_LOGOUT)
        return 0;
    uint32_t replays = 0;
    return recover_patiently(c, operation, connection_stale(c), &replays);
}

/* Before replaying a 58 to a replicated request (a metadata command, or a
 * partition's: SendMessages, offsets, DeleteSegments) on a cluster of 2 or
 * more nodes: the node may be a backup now, the leader having moved without
 * this connection noticing, so settle on the leader again (the whole
 * request, header included, survives for the replay; a 58 applied
 * nothing). *moved says whether the request now travels on another
 * connection, under another session. */
static int resettle(sl_client_t *c, uint8_t operation, const care_attempt_t *a, bool *moved)
{
    sl_client_care_t *k = &c->care;
    *moved = false;
    bool replicated = sl_op_metadata(operation) || sl_op_partition(operation) ||
                      operation == SL_OP_DELETE_SEGMENTS;
    if (a->rc != -SL_ERR_TRANSIENT_NOT_ACCEPTED || !replicated || !sl_client_settle_on(c) ||
        k->cluster_nodes < 2 || !remembered(c))
        return 0;
    sl_buf_reset(&k->saved);
    sl_put_bytes(&k->saved, c->tx.data, c->tx.len);
    if (!sl_buf_ok(&k->saved))
        return -SL_ERR_ERROR;
    uint64_t moves = k->leader_moves;
    int rc = sl_client_settle(c, k->username, k->password, k->token, NULL);
    *moved = k->leader_moves != moves;
    sl_client_results_release(c);
    sl_buf_reset(&c->tx);
    sl_put_bytes(&c->tx, k->saved.data, k->saved.len);
    if (rc == 0 && !sl_buf_ok(&c->tx))
        rc = -SL_ERR_ERROR;
    return rc;
}

int sl_client_care_call(sl_client_t *c, uint8_t operation, uint32_t code, sl_client_reply_t *reply)
{
    *reply = (sl_client_reply_t){.outcome = SL_CLIENT_REPLY_BAD_FRAME};
    int rc = sl_client_care_prepare(c, operation);
    if (rc != 0)
        return rc;
    uint32_t replays = 0, recoveries = 0;
    care_attempt_t a = {.reply = reply, .had_session = c->session.session != 0};
    a.rc = sl_client_call_once(c, operation, code, reply, &a.sent, &a.transport);
    /* Bounded: every pass spends a replay or a recovery. */
    for (;;) {
        care_step_t step = classify(c, operation, &a);
        if (step == CARE_REPLAY && replays < c->care.transient_retries) {
            sleep_ms(c, sl_client_backoff_ms(c->care.transient_delay_ms,
                                             SL_CLIENT_TRANSIENT_DELAY_MAX_MS, replays, jitter()));
            replays++;
            c->care.replays++;
            bool moved;
            rc = resettle(c, operation, &a, &moved);
            if (rc != 0)
                return rc;
            /* Nothing was applied (58), so a request moved to another node
             * is numbered again under the session there. */
            a.rc = moved ? sl_client_call_once(c, operation, code, reply, &a.sent, &a.transport)
                         : sl_client_resend(c, reply, &a.sent, &a.transport);
            continue;
        }
        if (step != CARE_RECOVER || recoveries >= SL_CLIENT_RECOVERIES_MAX)
            return a.rc;
        recoveries++;
        if (reply->outcome == SL_CLIENT_REPLY_EVICTED || reply->outcome == SL_CLIENT_REPLY_STATUS)
            sl_client_session_reset(&c->session); /* status 40: the server forgot us */
        rc = recover_patiently(c, operation, c->fd < 0, &replays);
        if (rc != 0)
            return rc;
        a.had_session = c->session.session != 0;
        a.rc = sl_client_call_once(c, operation, code, reply, &a.sent, &a.transport);
    }
}

/* --- heartbeat ------------------------------------------------------------------------- */

int sl_client_tick(sl_client_t *c)
{
    if (c->batch.open)
        return 0; /* a ping would abandon the batch being built */
    if (sl_client_pipe_busy(c))
        return 0; /* the connection is in use: requests are in flight */
    if (sl_client_reconnect_on(c)) {
        bool stale = connection_stale(c);
        if (stale || (remembered(c) && c->session.session == 0)) {
            sl_client_call_begin(c);
            int rc = recover(c, SL_OP_NON_REPLICATED, stale);
            if (rc != 0)
                return rc;
        }
    } else if (c->fd < 0) {
        return -SL_ERR_NOT_CONNECTED;
    }
    uint32_t interval_ms = c->care.heartbeat_interval_ms;
    if (interval_ms == 0)
        return 0;
    uint64_t idle_us = sl_clock_monotonic_us() - c->care.last_send_us;
    if (idle_us < (uint64_t)interval_ms * 1000u)
        return 0;
    return sl_client_ping(c);
}
