/* The programs of examples/ against the real sluiced, run as processes:
 * the producer's messages come out of the consumer exactly, a second
 * consumer run finds them committed, and two consumer_group members started
 * together print every message once between them. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "harness.h"

#define MESSAGES 300

static th_server_t srv;

static int start(void **state)
{
    (void)state;
    return th_start(&srv, NULL) ? 0 : -1;
}

static int stop(void **state)
{
    (void)state;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

/* "<examples dir>/<program> 127.0.0.1 <port> <args>" */
static FILE *launch(const char *program, const char *args)
{
    const char *dir = getenv("SLUICE_EXAMPLES_DIR");
    assert_non_null(dir);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s/%s' 127.0.0.1 %u %s", dir, program, srv.port, args);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    return f;
}

static void finish(FILE *f)
{
    int status = pclose(f);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Marks "message-<n>" lines in seen (each once); returns how many. Lines
 * starting with skip (may be NULL) are ignored. */
static int collect(FILE *f, unsigned char *seen, const char *skip)
{
    char line[256];
    int n = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (skip != NULL && strncmp(line, skip, strlen(skip)) == 0)
            continue;
        unsigned index;
        assert_int_equal(sscanf(line, "message-%u", &index), 1);
        assert_true(index < MESSAGES);
        assert_int_equal(seen[index], 0);
        seen[index] = 1;
        n++;
    }
    return n;
}

static void run_producer(const char *topic, unsigned count)
{
    char args[128], line[256];
    snprintf(args, sizeof(args), "ex %s %u", topic, count);
    FILE *f = launch("producer", args);
    assert_non_null(fgets(line, sizeof(line), f));
    unsigned sent;
    assert_int_equal(sscanf(line, "sent %u messages", &sent), 1);
    assert_int_equal(sent, count);
    finish(f);
}

static void test_producer_then_consumer(void **state)
{
    (void)state;
    run_producer("t", MESSAGES);
    unsigned char seen[MESSAGES] = {0};
    FILE *f = launch("consumer", "ex t reader 1000 1000");
    assert_int_equal(collect(f, seen, NULL), MESSAGES);
    finish(f);
    for (int i = 0; i < MESSAGES; i++)
        assert_int_equal(seen[i], 1);
    /* Committed: the same consumer finds nothing new. */
    unsigned char again[MESSAGES] = {0};
    f = launch("consumer", "ex t reader 1000 300");
    assert_int_equal(collect(f, again, NULL), 0);
    finish(f);
}

/* Reads the member's first line, "ready: <partitions>". */
static void wait_ready(FILE *f)
{
    char line[256];
    assert_non_null(fgets(line, sizeof(line), f));
    assert_memory_equal(line, "ready:", 6);
}

static void test_two_group_members(void **state)
{
    (void)state;
    run_producer("g", 0); /* creates the topic */
    FILE *a = launch("consumer_group", "ex g printers 4000");
    wait_ready(a);
    FILE *b = launch("consumer_group", "ex g printers 4000");
    wait_ready(b);
    run_producer("g", MESSAGES);
    unsigned char seen[MESSAGES] = {0};
    int from_a = collect(a, seen, "ready:");
    int from_b = collect(b, seen, "ready:");
    finish(a);
    finish(b);
    /* Between them every message once, and both did some of the work. */
    assert_int_equal(from_a + from_b, MESSAGES);
    assert_true(from_a > 0 && from_b > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_producer_then_consumer),
        cmocka_unit_test(test_two_group_members),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
