/* A cluster of real sluiced on loopback for integration and chaos tests
 * (docs/cluster.md): the roster every node reads, each node started with
 * --format-cluster the first time and over its own data directory after,
 * every link between two nodes through a cutting TCP proxy (proxy.h) when
 * asked, a fault control file per node (server/test_faults.h), and who
 * leads as the nodes say it. Helpers abort the program on a broken
 * environment (no port, a node that does not start) and report everything
 * else to the caller, so a long run counts what went wrong instead of
 * stopping at the first refusal. Start, restart and stop nodes from the
 * thread that started the cluster: each node dies with that thread
 * (PR_SET_PDEATHSIG in harness.c). */
#ifndef SL_TEST_CLUSTER_H
#define SL_TEST_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "harness.h"
#include "proxy.h"

struct sl_cluster;

#define TH_CLUSTER_NODES_MAX 3

typedef struct th_cluster_node {
    th_server_t srv;
    bool alive;
    uint16_t tcp, replica;
    char config[4096];
    char id[4];
    const char *args[4];
    char fault_file[320]; /* "" without faults */
    char fault_env[400];  /* "SLUICE_FAULT_FILE=<fault_file>" */
    const char *env[2];
} th_cluster_node_t;

typedef struct th_cluster_options {
    int nodes;          /* 2 or 3; 0: 3 */
    const char *name;   /* the cluster's name; NULL: "it-cluster" */
    const char *timing; /* extra [cluster] lines (heartbeat_timeout = ...); NULL: none */
    const char *extra;  /* other tables for every node's file ([heartbeat] ...); NULL: none */
    bool proxies;       /* node i dials each higher node j through proxy[i][j] */
    bool faults;        /* a SLUICE_FAULT_FILE per node (th_cluster_fault) */
    /* Called with every cluster metadata answer th_cluster_leader_seen_by
     * reads (a test's checks of the roster a node reports); NULL: none. */
    void (*on_metadata)(const struct sl_cluster *m);
} th_cluster_options_t;

typedef struct th_cluster {
    int count;
    th_cluster_node_t nodes[TH_CLUSTER_NODES_MAX];
    th_proxy_t *proxy[TH_CLUSTER_NODES_MAX][TH_CLUSTER_NODES_MAX]; /* [i][j], i < j */
    void (*on_metadata)(const struct sl_cluster *m);
} th_cluster_t;

/* Picks the ports, starts the proxies (when asked) and writes every node's
 * roster (nodes[i].config) without starting anything: th_cluster_start
 * does this first; a test of a refused start uses it alone. */
void th_cluster_configure(th_cluster_t *c, const th_cluster_options_t *o);
/* Formats and starts every node. False when io_uring is refused here (the
 * caller exits 77). */
bool th_cluster_start(th_cluster_t *c, const th_cluster_options_t *o);
/* Starts node i again over its data directory (after a kill). False when
 * io_uring is refused. */
bool th_cluster_restart(th_cluster_t *c, int i);
/* Starts node i over a new empty data directory without --format-cluster:
 * a lost disk (after th_cluster_stop_node and th_cleanup of its old one).
 * False when io_uring is refused. */
bool th_cluster_start_wiped(th_cluster_t *c, int i);
/* Signals node i (SIGKILL, SIGTERM) and reaps it. */
void th_cluster_stop_node(th_cluster_t *c, int i, int sig);
/* Every live node stopped with sig (SIGTERM: their partitions flush), the
 * directories kept for a restart. */
void th_cluster_stop_live(th_cluster_t *c, int sig);
/* Stops every live node, removes their directories and fault files, and
 * stops the proxies. */
void th_cluster_stop(th_cluster_t *c);

/* The node node i names as its only Leader, or -1 (not logged in, no
 * answer, none or several named). */
int th_cluster_leader_seen_by(th_cluster_t *c, int i);
/* Polls (100 ms apart, at most polls times) until every live node other
 * than those in `skip` (a bit per node) names the same single live leader
 * that is not in skip either; returns it, or -1 on giving up. */
int th_cluster_wait_leader(th_cluster_t *c, unsigned skip, int polls);
/* Polls (100 ms apart, at most polls times) until every live node names
 * the same single live leader other than `except` (-1: any), asking every
 * live node, `except` too when it runs (a restarted node must agree);
 * returns it, or -1 on giving up. */
int th_cluster_wait_leader_other(th_cluster_t *c, int except, int polls);

/* A client of node i logged in as iggy/iggy with leader settlement off,
 * or NULL when it cannot log in now (one attempt). */
struct sl_client *th_cluster_login(th_cluster_t *c, int i);

/* Replaces node i's fault control file with line ("" clears it). */
void th_cluster_fault(th_cluster_t *c, int i, const char *line);

/* How a node is cut from the others (every link it has goes through a
 * proxy: th_cluster_options_t.proxies). */
typedef enum th_cut {
    TH_CUT_NONE,     /* restore every link of the node */
    TH_CUT_BOTH,     /* nothing in or out */
    TH_CUT_OUTBOUND, /* the others do not hear it; it hears them */
    TH_CUT_INBOUND,  /* it does not hear the others; they hear it */
} th_cut_t;
void th_cluster_cut(th_cluster_t *c, int i, th_cut_t how);

/* --- For cmocka test programs (cluster_cmocka.c) ---------------------------
 * The calls above as a cmocka test wants them: a start io_uring refuses ends
 * the program as skipped (exit 77), and a node nobody can log in to or live
 * nodes that agree on no leader fail the running test. cluster.c stays free
 * of cmocka: the chaos program (tests/chaos) counts what went wrong instead
 * of stopping, and calls none of these. */

/* th_cluster_start, th_cluster_restart, th_cluster_start_wiped, or exit 77. */
void th_cluster_start_or_skip(th_cluster_t *c, const th_cluster_options_t *o);
void th_cluster_restart_or_skip(th_cluster_t *c, int i);
void th_cluster_start_wiped_or_skip(th_cluster_t *c, int i);
/* A client of node n logged in as iggy/iggy once it can log anyone in
 * (th_client_when_ready: up to 90 s); fails the test when it never does. */
struct sl_client *th_cluster_client(const th_cluster_node_t *n);
/* A client of node n (the leader) logged in as iggy/iggy that rides out
 * 57/58 (200 transient retries 20 ms apart) while the partition groups
 * follow the metadata primary there, which takes a view change after the
 * cluster starts; dialled every 100 ms for up to 90 s, then the test fails.
 * Plain TCP and libsluice's default leader settlement. */
struct sl_client *th_cluster_producer(const th_cluster_node_t *n);
/* th_cluster_wait_leader_other for up to 90 s (900 polls); fails the test
 * when the live nodes do not agree on one leader other than except. */
int th_cluster_agreed_leader(th_cluster_t *c, int except);

#endif
