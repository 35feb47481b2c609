/* A cluster of real sluiced on loopback (cluster.h). */
#include "cluster.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <sluice/client.h>

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void die(const char *what)
{
    fprintf(stderr, "cluster: %s\n", what);
    abort();
}

/* Node self's file: where it dials each node j is seen[j] (a proxy's port
 * for a higher node when proxies are on, else j's replica port). */
static void node_config(th_cluster_t *c, int self, const th_cluster_options_t *o,
                        const char *secret)
{
    th_cluster_node_t *n = &c->nodes[self];
    size_t cap = sizeof(n->config);
    size_t at =
        (size_t)snprintf(n->config, cap,
                         "[cluster]\nenabled = true\nname = \"%s\"\n%s"
                         "[cluster.auth]\nenabled = true\nshared_secret = \"%s\"\n",
                         o->name ? o->name : "it-cluster", o->timing ? o->timing : "", secret);
    for (int j = 0; j < c->count && at < cap; j++) {
        uint16_t seen = c->proxy[self][j] ? th_proxy_port(c->proxy[self][j]) : c->nodes[j].replica;
        at += (size_t)snprintf(n->config + at, cap - at,
                               "[[cluster.nodes]]\nname = \"node-%d\"\nip = \"127.0.0.1\"\n"
                               "replica_id = %d\nports = { tcp = %u, tcp_replica = %u }\n",
                               j, j, c->nodes[j].tcp, seen);
    }
    if (o->extra && at < cap)
        at += (size_t)snprintf(n->config + at, cap - at, "%s", o->extra);
    if (at >= cap)
        die("the roster does not fit");
}

/* Starts node i over data_dir (NULL: a new one), with --format-cluster when
 * format is set. */
static bool node_run(th_cluster_t *c, int i, const char *data_dir, bool format)
{
    th_cluster_node_t *n = &c->nodes[i];
    snprintf(n->id, sizeof(n->id), "%d", i);
    n->args[0] = "--replica-id";
    n->args[1] = n->id;
    n->args[2] = format ? "--format-cluster" : NULL;
    n->args[3] = NULL;
    th_options_t opt = {.extra_config = n->config,
                        .args = n->args,
                        .data_dir = data_dir,
                        .env = n->fault_file[0] ? n->env : NULL};
    if (!th_start(&n->srv, &opt))
        return false;
    if (n->srv.port != n->tcp)
        die("a node does not listen on its roster port");
    n->alive = true;
    return true;
}

static void fault_file_make(th_cluster_node_t *n)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(n->fault_file, sizeof(n->fault_file), "%s/sluice-cluster-faults-XXXXXX",
             tmp ? tmp : "/tmp");
    int fd = mkstemp(n->fault_file);
    if (fd < 0)
        die("mkstemp for a fault file");
    close(fd);
    snprintf(n->fault_env, sizeof(n->fault_env), "SLUICE_FAULT_FILE=%s", n->fault_file);
    n->env[0] = n->fault_env;
    n->env[1] = NULL;
}

static bool port_taken(const th_cluster_t *c, uint16_t port)
{
    for (int i = 0; i < c->count; i++)
        for (int j = i + 1; j < c->count; j++)
            if (c->proxy[i][j] && th_proxy_port(c->proxy[i][j]) == port)
                return true;
    return false;
}

/* Free ports for every node, then the proxies (when asked). A proxy binds
 * an ephemeral port after the nodes' ports were picked and closed, so the
 * kernel may hand it one of them: then everything is picked again (a node
 * would otherwise fail to listen). False on such a clash. */
static bool ports_pick(th_cluster_t *c, bool proxies)
{
    for (int i = 0; i < c->count; i++)
        for (int j = 0; j < c->count; j++)
            if (c->proxy[i][j]) {
                th_proxy_stop(c->proxy[i][j]);
                c->proxy[i][j] = NULL;
            }
    for (int i = 0; i < c->count; i++) {
        c->nodes[i].tcp = th_free_port();
        c->nodes[i].replica = th_free_port();
    }
    for (int i = 0; proxies && i < c->count; i++)
        for (int j = i + 1; j < c->count; j++)
            c->proxy[i][j] = th_proxy_start(c->nodes[j].replica);
    for (int i = 0; i < c->count; i++)
        if (port_taken(c, c->nodes[i].tcp) || port_taken(c, c->nodes[i].replica))
            return false;
    return true;
}

void th_cluster_configure(th_cluster_t *c, const th_cluster_options_t *o)
{
    memset(c, 0, sizeof(*c));
    c->count = o->nodes ? o->nodes : TH_CLUSTER_NODES_MAX;
    c->on_metadata = o->on_metadata;
    if (c->count < 2 || c->count > TH_CLUSTER_NODES_MAX)
        die("a cluster of 2 or 3 nodes");
    /* The run's own secret, so two runs side by side never talk. */
    uint8_t raw[16];
    char secret[2 * sizeof(raw) + 1];
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        die("no randomness for the cluster secret");
    for (size_t k = 0; k < sizeof(raw); k++)
        snprintf(secret + 2 * k, 3, "%02x", raw[k]);
    for (int i = 0; i < c->count; i++)
        if (o->faults)
            fault_file_make(&c->nodes[i]);
    for (int attempt = 0; !ports_pick(c, o->proxies); attempt++)
        if (attempt == 10)
            die("the proxies keep taking the nodes' ports");
    for (int i = 0; i < c->count; i++)
        node_config(c, i, o, secret);
}

bool th_cluster_start(th_cluster_t *c, const th_cluster_options_t *o)
{
    th_cluster_configure(c, o);
    for (int i = 0; i < c->count; i++)
        if (!node_run(c, i, NULL, true))
            return false;
    return true;
}

bool th_cluster_restart(th_cluster_t *c, int i)
{
    return node_run(c, i, c->nodes[i].srv.data_dir, false);
}

bool th_cluster_start_wiped(th_cluster_t *c, int i)
{
    return node_run(c, i, NULL, false);
}

void th_cluster_stop_node(th_cluster_t *c, int i, int sig)
{
    th_stop(&c->nodes[i].srv, sig);
    c->nodes[i].alive = false;
}

void th_cluster_stop_live(th_cluster_t *c, int sig)
{
    for (int i = 0; i < c->count; i++)
        if (c->nodes[i].alive)
            th_cluster_stop_node(c, i, sig);
}

void th_cluster_stop(th_cluster_t *c)
{
    for (int i = 0; i < c->count; i++) {
        if (c->nodes[i].alive)
            th_cluster_stop_node(c, i, SIGTERM);
        th_cleanup(&c->nodes[i].srv);
        if (c->nodes[i].fault_file[0])
            unlink(c->nodes[i].fault_file);
    }
    for (int i = 0; i < c->count; i++)
        for (int j = 0; j < c->count; j++)
            if (c->proxy[i][j])
                th_proxy_stop(c->proxy[i][j]);
}

struct sl_client *th_cluster_login(th_cluster_t *c, int i)
{
    sl_client_t *client = NULL;
    if (th_client_connect(c->nodes[i].tcp, &client) != 0)
        return NULL;
    if (sl_client_login(client, "iggy", "iggy", NULL) != 0) {
        sl_client_close(client);
        return NULL;
    }
    return client;
}

int th_cluster_leader_seen_by(th_cluster_t *c, int i)
{
    sl_client_t *client = th_cluster_login(c, i);
    if (!client)
        return -1;
    const sl_cluster_t *m = NULL;
    int leader = -1, leaders = 0;
    if (sl_client_get_cluster_metadata(client, &m) == 0) {
        if (c->on_metadata)
            c->on_metadata(m);
        for (uint32_t k = 0; k < m->nodes_count; k++) {
            if (m->nodes[k].role != 0)
                continue;
            leaders++;
            for (int j = 0; j < c->count; j++)
                if (m->nodes[k].tcp_port == c->nodes[j].tcp)
                    leader = j;
        }
    }
    sl_client_close(client);
    return leaders == 1 ? leader : -1;
}

int th_cluster_wait_leader(th_cluster_t *c, unsigned skip, int polls)
{
    for (int p = 0; p < polls; p++) {
        int agreed = -2;
        for (int i = 0; i < c->count && agreed != -1; i++) {
            if (!c->nodes[i].alive || (skip & (1u << i)))
                continue;
            int l = th_cluster_leader_seen_by(c, i);
            agreed = (agreed == -2 || agreed == l) ? l : -1;
        }
        if (agreed >= 0 && c->nodes[agreed].alive && !(skip & (1u << agreed)))
            return agreed;
        pause_ms(100);
    }
    return -1;
}

int th_cluster_wait_leader_other(th_cluster_t *c, int except, int polls)
{
    for (int p = 0; p < polls; p++) {
        int leader = th_cluster_wait_leader(c, 0u, 1); /* one poll */
        if (leader >= 0 && leader != except)
            return leader;
        if (leader >= 0)
            pause_ms(100);
    }
    return -1;
}

void th_cluster_fault(th_cluster_t *c, int i, const char *line)
{
    /* Replaced atomically: the node reads the file on any tick. */
    const char *path = c->nodes[i].fault_file;
    if (!path[0])
        die("th_cluster_fault on a cluster started without faults");
    char tmp[400];
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
        die("cannot write a fault file");
}

void th_cluster_cut(th_cluster_t *c, int i, th_cut_t how)
{
    for (int j = 0; j < c->count; j++) {
        if (j == i)
            continue;
        /* The link between i and j: proxy[min][max], dialled by the lower. */
        bool dialer = i < j;
        th_proxy_t *p = dialer ? c->proxy[i][j] : c->proxy[j][i];
        if (!p)
            die("th_cluster_cut on a cluster started without proxies");
        if (how == TH_CUT_NONE)
            th_proxy_restore(p);
        else if (how == TH_CUT_BOTH)
            th_proxy_cut(p);
        else if ((how == TH_CUT_OUTBOUND) == dialer)
            th_proxy_cut_one_way(p, TH_PROXY_FROM_DIALER);
        else
            th_proxy_cut_one_way(p, TH_PROXY_FROM_TARGET);
    }
}
