/* The cluster helpers that fail a cmocka test or skip the program
 * (cluster.h, "For cmocka test programs"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "cluster.h"

/* Polls of 100 ms: 90 s before a wait fails. */
#define POLLS_MAX 900

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

void th_cluster_start_or_skip(th_cluster_t *c, const th_cluster_options_t *o)
{
    if (!th_cluster_start(c, o))
        exit(77);
}

void th_cluster_restart_or_skip(th_cluster_t *c, int i)
{
    if (!th_cluster_restart(c, i))
        exit(77);
}

void th_cluster_start_wiped_or_skip(th_cluster_t *c, int i)
{
    if (!th_cluster_start_wiped(c, i))
        exit(77);
}

struct sl_client *th_cluster_client(const th_cluster_node_t *n)
{
    sl_client_t *c = th_client_when_ready((th_server_t *)&n->srv, n->tcp);
    assert_non_null(c);
    return c;
}

struct sl_client *th_cluster_producer(const th_cluster_node_t *n)
{
    sl_client_options_t o = {.transient_retries = 200, .transient_delay_ms = 20};
    for (int p = 0; p < POLLS_MAX; p++) {
        sl_client_t *c = NULL;
        if (sl_client_connect("127.0.0.1", n->tcp, &o, &c) == 0) {
            if (sl_client_login(c, "iggy", "iggy", NULL) == 0)
                return c;
            sl_client_close(c);
        }
        pause_ms(100);
    }
    fail_msg("no producer could log in on port %u", n->tcp);
    return NULL;
}

int th_cluster_agreed_leader(th_cluster_t *c, int except)
{
    int leader = th_cluster_wait_leader_other(c, except, POLLS_MAX);
    if (leader < 0)
        fail_msg("the live nodes did not agree on one leader");
    return leader;
}
