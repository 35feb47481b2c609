/* sluice-bench's Iggy kinds end to end: each of the eight kinds runs with
 * tiny sizes against a real sluiced started here (tcp --server-address, so
 * the ceiling runs beside it) and against the `ceiling` transport alone.
 * Checked: exit status, iggy-bench's summary lines, report.json (parsed:
 * its fields, and that the message counts add up: what producers sent,
 * what consumers received, what they were expected to receive, per actor
 * and per group), and that chart.svg is well-formed XML. No timing is
 * asserted. The earlier figures' --only cluster runs once, tiny, as a
 * smoke test of its servers and its counts. */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "harness.h"

static th_server_t srv;
static bool started;
static char work[256]; /* per test: the bench's output and its temporary data */

/* --- running the bench --------------------------------------------------------------------- */

enum { ARGS_MAX = 48, OUT_MAX = 1 << 20 };

static char output[OUT_MAX]; /* what the last run printed */

/* Runs sluice-bench with the words of line (space-separated; "PORT" is
 * replaced by sluiced's port, "OUT" by the output directory); returns its
 * exit status, its output in `output`. */
__attribute__((format(printf, 1, 2))) static int bench(const char *fmt, ...)
{
    char line[1024], words[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    snprintf(words, sizeof(words), "%s", line);
    const char *binary = getenv("SLUICE_BENCH");
    assert_non_null(binary);
    char *argv[ARGS_MAX] = {(char *)binary};
    int argc = 1;
    static char port[16], out[300], data[300];
    snprintf(port, sizeof(port), "127.0.0.1:%u", srv.port);
    snprintf(out, sizeof(out), "%s/out", work);
    snprintf(data, sizeof(data), "%s", work);
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w && argc < ARGS_MAX - 3;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(w, "ADDR") == 0 ? port : strcmp(w, "OUT") == 0 ? out : w;
    /* temporary data of the run (the ceiling's files) next to its output */
    memmove(argv + 3, argv + 1, sizeof(char *) * (size_t)(argc - 1));
    argv[1] = "--dir";
    argv[2] = data;
    argc += 2;
    argv[argc] = NULL;
    char log[320];
    snprintf(log, sizeof(log), "%s/bench.log", work);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            _exit(126);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(binary, argv);
        _exit(127);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    size_t n = fread(output, 1, sizeof(output) - 1, f);
    output[n] = '\0';
    fclose(f);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0)
        fprintf(stderr, "sluice-bench %s exited %d:\n%s\n", line, code, output);
    return code;
}

/* The contents of the only directory under work/out, file name. */
static char *read_output_file(const char *name)
{
    char dir[300], path[700];
    snprintf(dir, sizeof(dir), "%s/out", work);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s/%s", dir, e->d_name, name);
        found++;
    }
    closedir(d);
    assert_int_equal(found, 1);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = '\0';
    fclose(f);
    return text;
}

/* --- a small JSON reader: the whole grammar, values kept as a tree ------------------------- */

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;

typedef struct jnode {
    jtype_t type;
    const char *key; /* in an object: the member's name (not NUL-terminated) */
    size_t key_len;
    double num;
    const char *str;
    size_t str_len;
    int child, next; /* indexes, -1 none */
} jnode_t;

enum { JNODES_MAX = 200000, JDEPTH_MAX = 32 };

typedef struct jdoc {
    jnode_t *nodes;
    int count;
    const char *p;
    bool ok;
} jdoc_t;

static int jvalue(jdoc_t *d, int depth);

static void jspace(jdoc_t *d)
{
    while (*d->p == ' ' || *d->p == '\n' || *d->p == '\t' || *d->p == '\r')
        d->p++;
}

static int jnew(jdoc_t *d, jtype_t t)
{
    if (d->count >= JNODES_MAX) {
        d->ok = false;
        return -1;
    }
    d->nodes[d->count] = (jnode_t){.type = t, .child = -1, .next = -1};
    return d->count++;
}

/* A string at d->p (after the quote); *s and *len: its raw text. */
static bool jstring(jdoc_t *d, const char **s, size_t *len)
{
    const char *start = d->p;
    while (*d->p && *d->p != '"') {
        if ((unsigned char)*d->p < 0x20)
            return false;
        if (*d->p == '\\') {
            d->p++;
            if (*d->p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)d->p[i]))
                        return false;
                d->p += 4;
            } else if (!strchr("\"\\/bfnrt", *d->p) || !*d->p) {
                return false;
            }
        }
        d->p++;
    }
    if (*d->p != '"')
        return false;
    *s = start;
    *len = (size_t)(d->p - start);
    d->p++;
    return true;
}

static int jcontainer(jdoc_t *d, int depth, bool object)
{
    int node = jnew(d, object ? J_OBJ : J_ARR), last = -1;
    d->p++;
    jspace(d);
    if (*d->p == (object ? '}' : ']')) {
        d->p++;
        return node;
    }
    for (;;) {
        const char *key = NULL;
        size_t key_len = 0;
        if (object) {
            jspace(d);
            if (*d->p++ != '"' || !jstring(d, &key, &key_len))
                return d->ok = false, -1;
            jspace(d);
            if (*d->p++ != ':')
                return d->ok = false, -1;
        }
        int v = jvalue(d, depth + 1);
        if (v < 0 || node < 0)
            return d->ok = false, -1;
        d->nodes[v].key = key;
        d->nodes[v].key_len = key_len;
        if (last < 0)
            d->nodes[node].child = v;
        else
            d->nodes[last].next = v;
        last = v;
        jspace(d);
        if (*d->p == ',') {
            d->p++;
            continue;
        }
        if (*d->p++ != (object ? '}' : ']'))
            return d->ok = false, -1;
        return node;
    }
}

static int jvalue(jdoc_t *d, int depth)
{
    if (depth > JDEPTH_MAX)
        return d->ok = false, -1;
    jspace(d);
    char c = *d->p;
    if (c == '{' || c == '[')
        return jcontainer(d, depth, c == '{');
    if (c == '"') {
        int n = jnew(d, J_STR);
        d->p++;
        if (n < 0 || !jstring(d, &d->nodes[n].str, &d->nodes[n].str_len))
            return d->ok = false, -1;
        return n;
    }
    static const struct {
        const char *word;
        jtype_t type;
        double value;
    } words[] = {{"true", J_BOOL, 1}, {"false", J_BOOL, 0}, {"null", J_NULL, 0}};
    for (int i = 0; i < 3; i++) {
        if (strncmp(d->p, words[i].word, strlen(words[i].word)) == 0) {
            int n = jnew(d, words[i].type);
            d->p += strlen(words[i].word);
            if (n >= 0)
                d->nodes[n].num = words[i].value;
            return n;
        }
    }
    if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        double v = strtod(d->p, &end);
        if (end == d->p)
            return d->ok = false, -1;
        int n = jnew(d, J_NUM);
        if (n >= 0)
            d->nodes[n].num = v;
        d->p = end;
        return n;
    }
    return d->ok = false, -1;
}

static jdoc_t jparse(const char *text)
{
    jdoc_t d = {.nodes = calloc(JNODES_MAX, sizeof(jnode_t)), .p = text, .ok = true};
    assert_non_null(d.nodes);
    int root = jvalue(&d, 0);
    jspace(&d);
    d.ok = d.ok && root == 0 && *d.p == '\0';
    return d;
}

/* The member key of object node o (fails the test when missing). */
static const jnode_t *jget(const jdoc_t *d, const jnode_t *o, const char *key)
{
    assert_true(o->type == J_OBJ);
    for (int c = o->child; c >= 0; c = d->nodes[c].next)
        if (d->nodes[c].key_len == strlen(key) && memcmp(d->nodes[c].key, key, strlen(key)) == 0)
            return &d->nodes[c];
    fprintf(stderr, "report.json: no member %s\n", key);
    fail();
    return NULL;
}

static double jnum(const jdoc_t *d, const jnode_t *o, const char *key)
{
    const jnode_t *n = jget(d, o, key);
    assert_int_equal(n->type, J_NUM);
    return n->num;
}

static bool jstr_is(const jdoc_t *d, const jnode_t *o, const char *key, const char *want)
{
    const jnode_t *n = jget(d, o, key);
    return n->type == J_STR && n->str_len == strlen(want) && memcmp(n->str, want, n->str_len) == 0;
}

static int jlen(const jdoc_t *d, const jnode_t *a)
{
    int n = 0;
    for (int c = a->child; c >= 0; c = d->nodes[c].next)
        n++;
    return n;
}

static const jnode_t *jat(const jdoc_t *d, const jnode_t *a, int i)
{
    assert_true(a->type == J_ARR);
    int c = a->child;
    for (; c >= 0 && i > 0; i--)
        c = d->nodes[c].next;
    assert_true(c >= 0);
    return &d->nodes[c];
}

/* --- XML well-formedness (what an SVG must at least be) ------------------------------------ */

/* Tags nest and close in order, attributes are name="value" with no '<'
 * or bare '&' inside, text has no bare '&' or '<'. Returns the element count. */
static int xml_well_formed(const char *s)
{
    char stack[64][32];
    int depth = 0, elements = 0;
    if (strncmp(s, "<?xml", 5) == 0)
        s = strstr(s, "?>") + 2;
    for (; *s; s++) {
        if (*s == '&') {
            assert_true(strncmp(s, "&lt;", 4) == 0 || strncmp(s, "&gt;", 4) == 0 ||
                        strncmp(s, "&amp;", 5) == 0 || strncmp(s, "&quot;", 6) == 0);
            continue;
        }
        if (*s != '<')
            continue;
        bool closing = s[1] == '/';
        const char *name = s + (closing ? 2 : 1);
        size_t n = strcspn(name, " \t\n/>");
        assert_true(n > 0 && n < 32);
        const char *end = name + n;
        bool in_value = false;
        for (; *end && (in_value || *end != '>'); end++) {
            if (*end == '"')
                in_value = !in_value;
            else if (*end == '<')
                fail(); /* a '<' inside a tag */
        }
        assert_int_equal(*end, '>');
        bool self_closing = end[-1] == '/';
        if (closing) {
            assert_true(depth > 0);
            depth--;
            assert_int_equal(strlen(stack[depth]), n);
            assert_memory_equal(stack[depth], name, n);
        } else {
            elements++;
            if (!self_closing) {
                assert_true(depth < 64);
                memcpy(stack[depth], name, n);
                stack[depth++][n] = '\0';
            }
        }
        s = end;
    }
    assert_int_equal(depth, 0);
    return elements;
}

/* --- one run's checks ------------------------------------------------------------------------- */

typedef struct expect {
    const char *kind_key;
    int actors;
    double sent, received; /* messages over all actors */
    const char *groups[4]; /* group kinds present, in order */
} expect_t;

/* The counts of one target: sent, received and expected as planned, and
 * the actors' own counts add up to them and to their groups'. */
static void check_target(const jdoc_t *d, const jnode_t *t, const expect_t *e)
{
    assert_int_equal((int)jnum(d, t, "messages_sent"), (int)e->sent);
    assert_int_equal((int)jnum(d, t, "messages_received"), (int)e->received);
    assert_int_equal((int)jnum(d, t, "messages_expected"), (int)e->received);
    /* CPU figures are present and numbers (their values depend on the machine). */
    assert_true(jnum(d, t, "server_cpu_ns") >= 0 && jnum(d, t, "bench_cpu_ns") >= 0);
    const jnode_t *actors = jget(d, t, "individual_metrics");
    assert_int_equal(jlen(d, actors), e->actors);
    double sent = 0, received = 0;
    for (int i = 0; i < e->actors; i++) {
        const jnode_t *s = jget(d, jat(d, actors, i), "summary");
        sent += jnum(d, s, "messages_sent");
        received += jnum(d, s, "messages_received");
        assert_true(jnum(d, s, "min_latency_ms") <= jnum(d, s, "p50_latency_ms"));
        assert_true(jnum(d, s, "p50_latency_ms") <= jnum(d, s, "p99_latency_ms") + 1e-9);
        assert_true(jnum(d, s, "p99_latency_ms") <= jnum(d, s, "max_latency_ms") + 1e-9);
    }
    assert_int_equal((int)sent, (int)e->sent);
    assert_int_equal((int)received, (int)e->received);
    const jnode_t *groups = jget(d, t, "group_metrics");
    int count = 0;
    while (count < 4 && e->groups[count])
        count++;
    assert_int_equal(jlen(d, groups), count);
    for (int g = 0; g < count; g++) {
        const jnode_t *gm = jat(d, groups, g);
        const jnode_t *s = jget(d, gm, "summary");
        assert_true(jstr_is(d, s, "kind", e->groups[g]));
        double want = strcmp(e->groups[g], "producers") == 0   ? e->sent
                      : strcmp(e->groups[g], "consumers") == 0 ? e->received
                      : strcmp(e->groups[g], "producers_and_consumers") == 0
                          ? e->sent + e->received
                          : e->received; /* producing consumers count what came back */
        assert_int_equal((int)jnum(d, s, "total_messages"), (int)want);
        assert_true(jnum(d, s, "total_throughput_megabytes_per_second") > 0);
        assert_true(jnum(d, s, "total_throughput_messages_per_second") > 0);
        assert_true(jnum(d, s, "average_p50_latency_ms") > 0);
        jnum(d, s, "average_p90_latency_ms");
        jnum(d, s, "average_p95_latency_ms");
        jnum(d, s, "average_p999_latency_ms");
        jnum(d, s, "average_p9999_latency_ms");
        jnum(d, s, "average_latency_ms");
        jnum(d, s, "std_dev_latency_ms");
        assert_true(jlen(d, jget(d, jget(d, gm, "avg_throughput_mb_ts"), "points")) > 0);
        assert_true(jlen(d, jget(d, jget(d, gm, "avg_latency_ts"), "points")) > 0);
    }
}

/* Checks a finished run's output, report.json and chart.svg. targets: how
 * many ran (ceiling + sluiced, or the ceiling alone). */
static void check_run(const expect_t *e, int targets)
{
    char *json = read_output_file("report.json");
    jdoc_t d = jparse(json);
    assert_true(d.ok);
    const jnode_t *root = &d.nodes[0];
    const jnode_t *params = jget(&d, root, "params");
    assert_true(jstr_is(&d, params, "benchmark_kind", e->kind_key));
    const jnode_t *list = jget(&d, root, "targets");
    assert_int_equal(jlen(&d, list), targets);
    for (int i = 0; i < targets; i++) {
        const jnode_t *t = jat(&d, list, i);
        assert_true(jstr_is(&d, t, "target", i == 0 ? "ceiling" : "sluiced"));
        check_target(&d, t, e);
    }
    /* the top level is the main target's, under iggy-bench's names */
    assert_true(jstr_is(&d, root, "target", targets == 2 ? "sluiced" : "ceiling"));
    assert_int_equal(jlen(&d, jget(&d, root, "group_metrics")),
                     jlen(&d, jget(&d, jat(&d, list, targets - 1), "group_metrics")));
    if (targets == 2) {
        const jnode_t *ratios = jget(&d, root, "vs_ceiling");
        const jnode_t *first = jget(&d, ratios, e->groups[0]);
        assert_true(jnum(&d, first, "throughput") > 0);
    }
    free(d.nodes);
    free(json);
    char *svg = read_output_file("chart.svg");
    assert_true(xml_well_formed(svg) > 10);
    assert_non_null(strstr(svg, "<svg"));
    assert_non_null(strstr(svg, "<polyline"));
    free(svg);
    /* iggy-bench's summary line, once per group for the main target */
    static const char *const prefixes[][2] = {
        {"producers", "Producers Results: Total throughput: "},
        {"consumers", "Consumers Results: Total throughput: "},
        {"producing_consumers", "Producing Consumer Results: Total throughput: "},
        {"producers_and_consumers", "Aggregate Results: Total throughput: "},
    };
    for (int g = 0; g < 4 && e->groups[g]; g++)
        for (int k = 0; k < 4; k++)
            if (strcmp(prefixes[k][0], e->groups[g]) == 0) {
                const char *line = strstr(output, prefixes[k][1]);
                assert_non_null(line);
                assert_non_null(strstr(line, " MB/s, "));
                assert_non_null(strstr(line, "p9999 latency: "));
            }
    if (targets == 2)
        assert_non_null(strstr(output, "vs ceiling: throughput "));
}

/* --- the tests -----------------------------------------------------------------------------------
 */

static int setup(void **state)
{
    (void)state;
    snprintf(work, sizeof(work), "%s/sluice-test-bench-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    assert_non_null(mkdtemp(work));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
    return system(cmd) == 0 ? 0 : -1;
}

#define GLOBALS "-m 100 -P 10 -b 4"

static void run_kind(const char *opts, const expect_t *e)
{
    if (!started)
        skip();
    assert_int_equal(bench(GLOBALS " %s tcp --server-address ADDR output -o OUT", opts), 0);
    check_run(e, 2);
}

static void test_pinned_producer(void **state)
{
    (void)state;
    expect_t e = {"pinned_producer", 2, 80, 0, {"producers"}};
    run_kind("pinned-producer --producers 2", &e);
}

static void test_pinned_consumer(void **state)
{
    (void)state;
    expect_t e = {"pinned_consumer", 2, 0, 80, {"consumers"}};
    run_kind("pc --consumers 2", &e);
}

static void test_pinned_producer_and_consumer(void **state)
{
    (void)state;
    expect_t e = {"pinned_producer_and_consumer",
                  4,
                  80,
                  80,
                  {"producers", "consumers", "producers_and_consumers"}};
    run_kind("ppc --producers 2 --consumers 2", &e);
}

static void test_balanced_producer(void **state)
{
    (void)state;
    expect_t e = {"balanced_producer", 2, 80, 0, {"producers"}};
    run_kind("balanced-producer --partitions 3 --producers 2", &e);
}

static void test_balanced_consumer_group(void **state)
{
    (void)state;
    expect_t e = {"balanced_consumer_group", 2, 0, 80, {"consumers"}};
    run_kind("bcg --partitions 3 --consumers 2", &e);
}

static void test_balanced_producer_and_consumer_group(void **state)
{
    (void)state;
    expect_t e = {"balanced_producer_and_consumer_group",
                  4,
                  80,
                  80,
                  {"producers", "consumers", "producers_and_consumers"}};
    run_kind("bpcg --partitions 3 --producers 2 --consumers 2", &e);
}

static void test_end_to_end(void **state)
{
    (void)state;
    expect_t e = {"end_to_end_producing_consumer", 2, 80, 80, {"producing_consumers"}};
    run_kind("e2e --producing-consumers 2 --streams 2", &e);
}

static void test_end_to_end_group(void **state)
{
    (void)state;
    /* max(2, 3) actors: two produce, three consume, all in one group */
    expect_t e = {"end_to_end_producing_consumer_group", 3, 80, 80, {"producing_consumers"}};
    run_kind("e2ecg --partitions 3 --producers 2 --consumers 3", &e);
}

/* The ceiling alone: iggy-bench's lines unprefixed, -T split over the
 * producers (10 kB / 2 = five 1000-byte batches each), message and batch
 * ranges, a rate limit, a warmup. */
static void test_ceiling_alone(void **state)
{
    (void)state;
    assert_int_equal(bench("-T 10kB -m 100 -P 10 pp --producers 2 ceiling output -o OUT"), 0);
    expect_t e = {"pinned_producer", 2, 100, 0, {"producers"}};
    check_run(&e, 1);
    assert_null(strstr(output, "(ceiling)"));
    teardown(NULL);
    setup(NULL);
    assert_int_equal(bench("-m 50..150 -P 5..15 -b 6 -r 1MB -w 1ms ppc --producers 2 --consumers 2 "
                           "ceiling output -o OUT"),
                     0);
    char *json = read_output_file("report.json");
    jdoc_t d = jparse(json);
    assert_true(d.ok);
    const jnode_t *t = jat(&d, jget(&d, &d.nodes[0], "targets"), 0);
    double sent = jnum(&d, t, "messages_sent");
    assert_true(sent >= 2 * 6 * 5 && sent <= 2 * 6 * 15);
    assert_int_equal((int)jnum(&d, t, "messages_received"), (int)sent);
    assert_int_equal((int)jnum(&d, t, "messages_expected"), (int)sent);
    free(d.nodes);
    free(json);
}

/* enforce_fsync topics, --pretty and --no-ceiling: only sluiced runs. */
static void test_fsync_no_ceiling(void **state)
{
    (void)state;
    if (!started)
        skip();
    assert_int_equal(bench("--enforce-fsync --no-ceiling --pretty " GLOBALS
                           " pp --producers 1 tcp --server-address ADDR output -o OUT"),
                     0);
    char *json = read_output_file("report.json");
    jdoc_t d = jparse(json);
    assert_true(d.ok);
    assert_int_equal(jlen(&d, jget(&d, &d.nodes[0], "targets")), 1);
    assert_true(jget(&d, jget(&d, &d.nodes[0], "params"), "enforce_fsync")->num == 1);
    free(d.nodes);
    free(json);
    assert_non_null(strstr(output, "Producer 1"));
    assert_null(strstr(output, "vs ceiling"));
}

/* The ops column of the n-th line of output that starts with prefix; -1
 * when there is none. */
static long ops_of_line(const char *prefix, int n)
{
    const char *p = output;
    for (int seen = 0; (p = strstr(p, prefix)) != NULL; p++) {
        if (p != output && p[-1] != '\n')
            continue;
        if (seen++ < n)
            continue;
        long ops = -1;
        return sscanf(p + strlen(prefix), "%ld", &ops) == 1 ? ops : -1;
    }
    return -1;
}

/* --only cluster with tiny counts: a single node and a 3-node cluster of
 * its own, every figure on both sides, every operation counted; then the
 * four message figures (produce and consume, plain and enforce_fsync),
 * each with a rate on both sides, and what the backups hold. */
static void test_only_cluster(void **state)
{
    (void)state;
    assert_int_equal(bench("--only cluster --rounds 2 --streams 8 --message-seconds 0.1 "
                           "--batch-messages 100"),
                     0);
    assert_non_null(strstr(output, "3-node cluster: leader 127.0.0.1:"));
    assert_non_null(strstr(output, "replicating"));
    /* 4 cycles of 3 operations per round from one client, 4 clients x 1
     * cycle, 4 user pairs: over 2 rounds on each side. */
    const long want[3] = {2 * 4 * 3, 2 * 4 * 1 * 3, 2 * 4 * 2};
    for (int fig = 0; fig < 3; fig++) {
        assert_int_equal(ops_of_line("    1 node ", fig), want[fig]);
        assert_int_equal(ops_of_line("    3 nodes ", fig), want[fig]);
    }
    for (int fig = 3; fig < 7; fig++) {
        assert_true(ops_of_line("    1 node ", fig) > 0); /* MB/s, whole part */
        assert_true(ops_of_line("    3 nodes ", fig) >= 0);
    }
    assert_int_equal(ops_of_line("    1 node ", 7), -1);
    assert_non_null(strstr(output, "3 / 1"));
    assert_non_null(strstr(output, "Messages on 1 node and on the leader of a 3-node cluster"));
    assert_non_null(strstr(output, "replication, after the last round:"));
    assert_non_null(strstr(output, "aim replicated produce >= 40 % of one node:"));
}

/* A bad command line: exit 2 and the reason, nothing run. */
static void test_bad_line(void **state)
{
    (void)state;
    assert_int_equal(bench("pp --streams 3 --producers 2 tcp"), 2);
    assert_non_null(strstr(output, "must be equal to the number of producers"));
    assert_int_equal(bench("--help"), 0);
    assert_non_null(strstr(output, "balanced-producer-and-consumer-group (bpcg)"));
    assert_non_null(strstr(output, "--only"));
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    started = th_start(&srv, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pinned_producer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pinned_consumer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pinned_producer_and_consumer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_balanced_producer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_balanced_consumer_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_balanced_producer_and_consumer_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_to_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_end_to_end_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ceiling_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fsync_no_ceiling, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_cluster, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (started) {
        th_stop(&srv, SIGTERM);
        th_cleanup(&srv);
    }
    return failed;
}
