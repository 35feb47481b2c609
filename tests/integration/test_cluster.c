/* Three real sluiced processes in cluster mode on loopback, each with its
 * own data directory: every replica link forms (with the keyed handshake),
 * a node with another shared secret is refused, a link cut by the test
 * proxy is lost and comes back once the proxy restores it, and each node
 * serves clients on its roster port. What the metadata group does over
 * these links is test_cluster_meta.c's. Waits are bounded by a count of
 * polls of the logs. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"
#include "proxy.h"

#define NODES 3
/* Log polls of 20 ms: 60 s on a loaded machine before a wait fails. */
#define POLLS_MAX 3000

static const char secret_a[] = "3f1c0a9e7b5d2c8e4a6f1b3d5c7e9a0b";
static const char secret_b[] = "wrong-secret-wrong-secret-wrong-secret";

typedef struct node_ports {
    uint16_t tcp;
    uint16_t replica;
} node_ports_t;

static void pick_ports(node_ports_t ports[NODES])
{
    for (int i = 0; i < NODES; i++) {
        ports[i].tcp = th_free_port();
        ports[i].replica = th_free_port();
    }
}

/* The [cluster] part of one node's file: `seen_replica[j]` is where this
 * node dials node j (a proxy port, or the node's own). */
static void cluster_config(char *out, size_t cap, const node_ports_t ports[NODES],
                           const uint16_t seen_replica[NODES], const char *secret)
{
    size_t at = (size_t)snprintf(out, cap,
                                 "[cluster]\nenabled = true\nname = \"it-cluster\"\n"
                                 "[cluster.auth]\nenabled = true\nshared_secret = \"%s\"\n",
                                 secret);
    for (int j = 0; j < NODES && at < cap; j++)
        at += (size_t)snprintf(out + at, cap - at,
                               "[[cluster.nodes]]\nname = \"node-%d\"\nip = \"127.0.0.1\"\n"
                               "replica_id = %d\nports = { tcp = %u, tcp_replica = %u }\n",
                               j, j, ports[j].tcp, seen_replica[j]);
    assert_true(at < cap);
}

typedef struct node {
    th_server_t srv;
    char config[4096];
    char id[4];
    const char *args[4];
} node_t;

static void node_start(node_t *n, int id, const node_ports_t ports[NODES],
                       const uint16_t seen_replica[NODES], const char *secret)
{
    cluster_config(n->config, sizeof(n->config), ports, seen_replica, secret);
    snprintf(n->id, sizeof(n->id), "%d", id);
    n->args[0] = "--replica-id";
    n->args[1] = n->id;
    n->args[2] = "--format-cluster"; /* a new cluster's first start */
    n->args[3] = NULL;
    th_options_t o = {.extra_config = n->config, .args = n->args};
    if (!th_start(&n->srv, &o))
        exit(77);
    assert_int_equal(n->srv.port, ports[id].tcp);
}

static void node_stop(node_t *n)
{
    th_stop(&n->srv, SIGTERM);
    th_cleanup(&n->srv);
}

static uint32_t count_in_log(th_server_t *srv, const char *needle)
{
    uint32_t count = 0;
    const char *log = th_log(srv);
    for (const char *p = strstr(log, needle); p; p = strstr(p + 1, needle))
        count++;
    return count;
}

/* Waits until the log holds needle at least `times` times. */
static void wait_log(th_server_t *srv, const char *needle, uint32_t times)
{
    for (int i = 0; i < POLLS_MAX; i++) {
        if (count_in_log(srv, needle) >= times)
            return;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "log of the node on port %u:\n%s\n", srv->port, th_log(srv));
    fail_msg("\"%s\" did not appear %u times in the log", needle, times);
}

static void link_line(char *buf, size_t cap, int a, int b, const char *what)
{
    snprintf(buf, cap, "replica link %d <-> %d %s", a, b, what);
}

static void test_links_form(void **state)
{
    (void)state;
    node_ports_t ports[NODES];
    pick_ports(ports);
    uint16_t direct[NODES] = {ports[0].replica, ports[1].replica, ports[2].replica};
    node_t nodes[NODES];
    for (int i = 0; i < NODES; i++)
        node_start(&nodes[i], i, ports, direct, secret_a);
    char line[160];
    for (int i = 0; i < NODES; i++) {
        for (int j = 0; j < NODES; j++) {
            if (i == j)
                continue;
            link_line(line, sizeof(line), i, j, i < j ? "up (dialed" : "up (accepted");
            wait_log(&nodes[i].srv, line, 1);
        }
        assert_true(count_in_log(&nodes[i].srv, "authenticated") >= 2);
    }
    /* Each node serves clients on its roster port, once the group has a
     * primary and the node has applied the root user (test_cluster_meta.c
     * tests the group itself). */
    for (int i = 0; i < NODES; i++) {
        struct sl_client *c = NULL;
        for (int p = 0; p < POLLS_MAX / 10 && !c; p++) {
            c = th_client(ports[i].tcp, "iggy", "iggy");
            if (!c) {
                struct timespec ts = {0, 200 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
        assert_non_null(c);
        assert_int_equal(sl_client_ping(c), 0);
        sl_client_close(c);
    }
    for (int i = 0; i < NODES; i++)
        node_stop(&nodes[i]);
}

static void test_wrong_secret_refused(void **state)
{
    (void)state;
    node_ports_t ports[NODES];
    pick_ports(ports);
    uint16_t direct[NODES] = {ports[0].replica, ports[1].replica, ports[2].replica};
    node_t nodes[NODES];
    node_start(&nodes[0], 0, ports, direct, secret_a);
    node_start(&nodes[1], 1, ports, direct, secret_a);
    node_start(&nodes[2], 2, ports, direct, secret_b);
    char line[160];
    link_line(line, sizeof(line), 0, 1, "up");
    wait_log(&nodes[0].srv, line, 1);
    /* 0 and 1 dial 2 and refuse its MAC, more than once (they redial). */
    for (int i = 0; i < 2; i++) {
        link_line(line, sizeof(line), i, 2,
                  "not established: the acceptor's MAC does not verify (another shared secret?)");
        wait_log(&nodes[i].srv, line, 2);
    }
    assert_int_equal(count_in_log(&nodes[2].srv, "up ("), 0);
    link_line(line, sizeof(line), 0, 2, "up");
    assert_int_equal(count_in_log(&nodes[0].srv, line), 0);
    for (int i = 0; i < NODES; i++)
        node_stop(&nodes[i]);
}

static void test_cut_link_reconnects(void **state)
{
    (void)state;
    node_ports_t ports[NODES];
    pick_ports(ports);
    uint16_t direct[NODES] = {ports[0].replica, ports[1].replica, ports[2].replica};
    /* Node 0 reaches node 1 through the proxy; every other path is direct. */
    th_proxy_t *proxy = th_proxy_start(ports[1].replica);
    uint16_t via_proxy[NODES] = {ports[0].replica, th_proxy_port(proxy), ports[2].replica};
    node_t nodes[NODES];
    node_start(&nodes[0], 0, ports, via_proxy, secret_a);
    node_start(&nodes[1], 1, ports, direct, secret_a);
    node_start(&nodes[2], 2, ports, direct, secret_a);
    char up01[160], up10[160], lost01[160], lost10[160], up02[160];
    link_line(up01, sizeof(up01), 0, 1, "up (dialed");
    link_line(up10, sizeof(up10), 1, 0, "up (accepted");
    link_line(lost01, sizeof(lost01), 0, 1, "lost");
    link_line(lost10, sizeof(lost10), 1, 0, "lost");
    link_line(up02, sizeof(up02), 0, 2, "up");
    wait_log(&nodes[0].srv, up01, 1);
    wait_log(&nodes[1].srv, up10, 1);
    wait_log(&nodes[0].srv, up02, 1);
    assert_int_equal(th_proxy_forwarded(proxy), 1);

    /* Dials that failed before node 1 listened count too. */
    const char *failed01 = "replica link 0 <-> 1 not established: ";
    uint32_t failed_before = count_in_log(&nodes[0].srv, failed01);
    th_proxy_cut(proxy);
    wait_log(&nodes[0].srv, lost01, 1);
    wait_log(&nodes[1].srv, lost10, 1);
    /* While cut, node 0 keeps redialing and the proxy hangs up on it. */
    wait_log(&nodes[0].srv, failed01, failed_before + 2);
    assert_int_equal(count_in_log(&nodes[0].srv, up01), 1);
    assert_int_equal(count_in_log(&nodes[0].srv, "replica link 0 <-> 2 lost"), 0);

    th_proxy_restore(proxy);
    wait_log(&nodes[0].srv, up01, 2);
    wait_log(&nodes[1].srv, up10, 2);
    assert_int_equal(th_proxy_forwarded(proxy), 2);
    for (int i = 0; i < NODES; i++)
        node_stop(&nodes[i]);
    th_proxy_stop(proxy);
}

/* Cluster mode without --replica-id does not start, and says why. */
static void test_needs_replica_id(void **state)
{
    (void)state;
    node_ports_t ports[NODES];
    pick_ports(ports);
    uint16_t direct[NODES] = {ports[0].replica, ports[1].replica, ports[2].replica};
    char config[4096];
    cluster_config(config, sizeof(config), ports, direct, secret_a);
    th_server_t srv;
    th_options_t o = {.extra_config = config};
    int status = 0;
    assert_false(th_try_start(&srv, &o, &status));
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 2);
    assert_non_null(strstr(th_log(&srv), "start sluiced with --replica-id N"));
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_form),
        cmocka_unit_test(test_wrong_secret_refused),
        cmocka_unit_test(test_cut_link_reconnects),
        cmocka_unit_test(test_needs_replica_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
