/* Leader settlement: after a login the client asks GetClusterMetadata and,
 * in a cluster of two or more nodes, moves to the first node that is Leader
 * and Healthy (the Node SDK's rule, commands.md "12 — GetClusterMetadata").
 * The decision is a pure function of the reply; the move dials, logs in and
 * only then lets the first connection go, so a failed move leaves the
 * client where it was, logged in. */
#include "client/client_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "wire/command.h"

/* --- the decision ------------------------------------------------------------------ */

bool sl_client_same_host(const char *a, const char *b)
{
    struct in6_addr a6, b6;
    struct in_addr a4, b4;
    if (inet_pton(AF_INET, a, &a4) == 1 && inet_pton(AF_INET, b, &b4) == 1)
        return a4.s_addr == b4.s_addr;
    if (inet_pton(AF_INET6, a, &a6) == 1 && inet_pton(AF_INET6, b, &b6) == 1)
        return memcmp(&a6, &b6, sizeof(a6)) == 0;
    /* Host names are case-insensitive (RFC 4343); a name and a literal
     * differ here even when the name resolves to it: a resolver call has no
     * place in a pure decision, and the peer's address covers that case. */
    return strcasecmp(a, b) == 0;
}

/* The first node a client should settle on, or NULL. */
static const sl_cluster_node_t *first_healthy_leader(const sl_get_cluster_metadata_reply_t *m)
{
    for (uint32_t i = 0; i < m->count; i++) {
        const sl_cluster_node_t *n = &m->items[i];
        if (n->role == SL_NODE_LEADER && n->status == SL_NODE_HEALTHY)
            return n;
    }
    return NULL;
}

static bool is_current(const sl_client_settle_in_t *in, const sl_client_address_t *to)
{
    if (to->port != in->port)
        return false;
    if (in->given_host != NULL && sl_client_same_host(in->given_host, to->host))
        return true;
    return in->peer_host != NULL && sl_client_same_host(in->peer_host, to->host);
}

/* The address a client of transport dials for node n: false when n has
 * none it can use. */
static bool node_address(const sl_cluster_node_t *n, sl_client_transport_t transport,
                         sl_client_address_t *out)
{
    uint16_t port = transport == SL_CLIENT_WEBSOCKET ? n->websocket_port : n->tcp_port;
    /* An address with a NUL inside would be dialled as a shorter one. */
    if (port == 0 || n->ip.len == 0 || n->ip.len >= SL_CLIENT_HOST_MAX ||
        memchr(n->ip.ptr, '\0', n->ip.len) != NULL)
        return false;
    out->port = port;
    memcpy(out->host, n->ip.ptr, n->ip.len);
    out->host[n->ip.len] = '\0';
    return true;
}

uint32_t sl_client_settle_roster(sl_span_t payload, sl_client_transport_t transport,
                                 sl_arena_t *arena, sl_client_address_t *out, uint32_t max)
{
    sl_get_cluster_metadata_reply_t m;
    if (sl_get_cluster_metadata_reply_decode(payload, arena, &m) != 0 || m.count < 2)
        return 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < m.count && n < max; i++)
        if (node_address(&m.items[i], transport, &out[n]))
            n++;
    return n;
}

bool sl_client_settle_decide(const sl_client_settle_in_t *in, sl_arena_t *arena,
                             sl_client_address_t *target, uint32_t *nodes_count)
{
    *nodes_count = 0;
    if (in->rc != 0)
        return false;
    sl_get_cluster_metadata_reply_t m;
    if (sl_get_cluster_metadata_reply_decode(in->payload, arena, &m) != 0)
        return false;
    *nodes_count = m.count;
    if (m.count < 2)
        return false;
    const sl_cluster_node_t *leader = first_healthy_leader(&m);
    if (leader == NULL)
        return false;
    sl_client_address_t to;
    if (!node_address(leader, in->transport, &to) || is_current(in, &to))
        return false;
    *target = to;
    return true;
}

/* --- the connection being replaced ------------------------------------------------ */

/* The per-connection part of a client: moved aside while a new connection
 * logs in, put back when that fails, closed when it works. */
typedef struct settle_conn {
    int fd;
    struct ssl_st *ssl;
    sl_client_ws_t *ws;
    sl_client_session_t session;
} settle_conn_t;

static void conn_take(sl_client_t *c, settle_conn_t *out)
{
    *out = (settle_conn_t){c->fd, c->link.ssl, c->link.ws, c->session};
    c->fd = -1;
    c->link.ssl = NULL;
    c->link.ws = NULL;
}

static void conn_put(sl_client_t *c, const settle_conn_t *in)
{
    c->fd = in->fd;
    c->link.ssl = in->ssl;
    c->link.ws = in->ws;
    c->session = in->session;
}

/* Closes a connection moved aside, leaving the current one in place. No
 * Logout: the server ends the session of a closed connection. */
static void conn_close(sl_client_t *c, const settle_conn_t *old)
{
    settle_conn_t current;
    conn_take(c, &current);
    conn_put(c, old);
    sl_client_link_close(c);
    conn_put(c, &current);
}

/* --- the move ---------------------------------------------------------------------- */

typedef struct settle_creds {
    const char *username;
    const char *password;
    const char *token;
    sl_identity_t *out;
} settle_creds_t;

/* The numeric address of the connected peer into buf, or NULL. */
static const char *peer_host(int fd, char *buf, size_t cap)
{
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0)
        return NULL;
    const void *addr =
        sa.ss_family == AF_INET6  ? (const void *)&((struct sockaddr_in6 *)&sa)->sin6_addr
        : sa.ss_family == AF_INET ? (const void *)&((struct sockaddr_in *)&sa)->sin_addr
                                  : NULL;
    if (addr == NULL || inet_ntop(sa.ss_family, addr, buf, (socklen_t)cap) == NULL)
        return NULL;
    return buf;
}

/* Dials to, logs in there and closes the old connection: 0 when moved;
 * otherwise the error, and the client is as it was. */
static int move_to(sl_client_t *c, const sl_client_address_t *to, const settle_creds_t *cr)
{
    char *host = strdup(to->host);
    if (host == NULL)
        return -SL_ERR_ERROR;
    int fd;
    int rc = sl_client_tcp_connect(to->host, to->port, c->connect_timeout_ms, &fd);
    if (rc != 0) {
        free(host);
        return rc;
    }
    settle_conn_t old;
    conn_take(c, &old);
    rc = sl_client_link_open(c, fd, to->host, to->port); /* closes fd on failure */
    if (rc == 0)
        rc = sl_client_login_with(c, cr->username, cr->password, cr->token, cr->out);
    if (rc != 0) {
        sl_client_link_close(c);
        conn_put(c, &old);
        free(host);
        return rc;
    }
    conn_close(c, &old);
    /* Reconnects dial the node the client settled on. */
    free(c->care.host);
    c->care.host = host;
    c->care.port = to->port;
    c->care.leader_moves++;
    return 0;
}

/* One round: GetClusterMetadata, then the decision. *to is set when the
 * client should move. An error only when the exchange closed the connection. */
static int ask(sl_client_t *c, sl_client_address_t *to, bool *move)
{
    *move = false;
    sl_client_reply_t r;
    int rc = sl_client_call_empty(c, SL_OP_NON_REPLICATED, SL_CMD_GET_CLUSTER_METADATA, &r);
    if (c->fd < 0)
        return rc != 0 ? rc : -SL_ERR_NOT_CONNECTED;
    char peer[INET6_ADDRSTRLEN];
    sl_client_settle_in_t in = {
        .rc = rc,
        .payload = r.payload,
        .transport = c->link.transport,
        .given_host = c->care.host,
        .peer_host = peer_host(c->fd, peer, sizeof(peer)),
        .port = c->care.port,
    };
    *move = sl_client_settle_decide(&in, &c->arena, to, &c->care.cluster_nodes);
    if (rc == 0 && c->care.cluster_nodes >= 2) {
        /* Kept only from answers that list a cluster: a node that lists
         * itself alone (or does not answer) leaves the last roster. */
        c->care.known_count = sl_client_settle_roster(r.payload, c->link.transport, &c->arena,
                                                      c->care.known, SL_CLIENT_KNOWN_NODES_MAX);
    }
    return 0;
}

bool sl_client_settle_on(const sl_client_t *c)
{
    return c->care.settle && c->care.host != NULL;
}

int sl_client_settle(sl_client_t *c, const char *username, const char *password, const char *token,
                     sl_identity_t *out)
{
    if (!sl_client_settle_on(c))
        return 0;
    settle_creds_t cr = {username, password, token, out};
    /* Its own exchanges get no connection care: a settlement inside a
     * recovery must not start another recovery. */
    bool recovering = c->care.recovering;
    c->care.recovering = true;
    int rc = 0;
    for (uint32_t hop = 0; hop <= SL_CLIENT_SETTLE_HOPS_MAX; hop++) {
        sl_client_address_t to;
        bool move;
        rc = ask(c, &to, &move);
        /* The last round only asks: it records the cluster's size. */
        if (rc != 0 || !move || hop == SL_CLIENT_SETTLE_HOPS_MAX)
            break;
        if (move_to(c, &to, &cr) != 0)
            break; /* the leader is out of reach: this node still serves */
    }
    c->care.recovering = recovering;
    return rc;
}
