/* The sluice command-line tool end to end: the built binary (SLUICE_CLI) runs
 * as a subprocess against a real sluiced started by the harness. Covers
 * streams, topics, partitions, messages (arguments, stdin, headers, every
 * poll strategy, --follow, message files both ways, polling as a group
 * member), consumer groups and offsets, users, tokens, contexts, login
 * sessions, the password prompt on a terminal, exit codes and error
 * messages, --help on every command, JSON validity, Iggy's list mode and
 * option forms, and the bash completion script. */
#define _GNU_SOURCE /* posix_openpt and friends */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on
#include <sluice/client.h>
#include <sluice/error.h>

#include "harness.h"

static th_server_t srv;
static char server_arg[64];
static char home[400];
static char root_token[256];

/* --- running the tool ----------------------------------------------------------------- */

typedef struct cli_res {
    int code; /* exit status; 128 + signal when killed */
    char *out;
    char *err;
} cli_res_t;

typedef struct spawn_opts {
    const char *input;      /* fed to stdin; NULL: /dev/null */
    size_t input_len;       /* 0: strlen(input) */
    int stdin_fd;           /* >= 0: use this descriptor as stdin (a pty) */
    const char *const *env; /* extra "NAME=value" entries, NULL-terminated */
} spawn_opts_t;

typedef struct child {
    pid_t pid;
    int in, out, err;
    const char *input;
    size_t input_left;
    char *out_buf; /* everything read so far */
    char *err_buf;
    size_t out_len, err_len;
} child_t;

static const char *cli_path(void)
{
    const char *p = getenv("SLUICE_CLI");
    return p ? p : "./sluice";
}

static void child_exec(const char *const *argv, const spawn_opts_t *o, int in, int out, int err)
{
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    static const char *const cleared[] = {
        "SLUICE_USERNAME", "SLUICE_PASSWORD", "SLUICE_TOKEN",  "SLUICE_SERVER",
        "SLUICE_CONTEXT",  "IGGY_USERNAME",   "IGGY_PASSWORD", "IGGY_TCP_SERVER_ADDRESS"};
    for (size_t i = 0; i < sizeof(cleared) / sizeof(cleared[0]); i++)
        unsetenv(cleared[i]);
    setenv("HOME", home, 1);
    for (const char *const *e = o->env; e && *e; e++)
        putenv((char *)*e);
    execv(argv[0], (char *const *)argv);
    _exit(127);
}

static child_t spawn(const char *const *argv, const spawn_opts_t *o)
{
    /* Close-on-exec: no child may hold another pipe end open (a stdin
     * writer kept open would never give the child its end of file). */
    int in[2], out[2], err[2];
    assert_int_equal(pipe2(in, O_CLOEXEC), 0);
    assert_int_equal(pipe2(out, O_CLOEXEC), 0);
    assert_int_equal(pipe2(err, O_CLOEXEC), 0);
    child_t c = {.input = o->input};
    c.input_left = o->input ? (o->input_len ? o->input_len : strlen(o->input)) : 0;
    c.pid = fork();
    assert_true(c.pid >= 0);
    if (c.pid == 0) {
        signal(SIGPIPE, SIG_DFL); /* the tool gets the default, not the test's */
        int src = o->stdin_fd >= 0 ? o->stdin_fd : in[0];
        if (o->stdin_fd < 0 && o->input == NULL)
            src = open("/dev/null", O_RDONLY);
        child_exec(argv, o, src, out[1], err[1]);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    c.in = in[1];
    c.out = out[0];
    c.err = err[0];
    c.out_buf = calloc(1, 1);
    c.err_buf = calloc(1, 1);
    fcntl(c.in, F_SETFL, O_NONBLOCK);
    if (c.input_left == 0) {
        close(c.in);
        c.in = -1;
    }
    return c;
}

/* Appends what fd has to *buf; false at end of file. */
static bool drain(int fd, char **buf, size_t *len)
{
    char chunk[8192];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0)
        return n < 0 && errno == EINTR;
    *buf = realloc(*buf, *len + (size_t)n + 1);
    assert_non_null(*buf);
    memcpy(*buf + *len, chunk, (size_t)n);
    *len += (size_t)n;
    (*buf)[*len] = '\0';
    return true;
}

/* One round of feeding stdin and reading outputs (up to wait_ms). */
static void pump(child_t *c, int wait_ms)
{
    struct pollfd p[3] = {{c->out, POLLIN, 0}, {c->err, POLLIN, 0}, {c->in, POLLOUT, 0}};
    assert_true(poll(p, 3, wait_ms) >= 0 || errno == EINTR);
    if (c->out >= 0 && p[0].revents && !drain(c->out, &c->out_buf, &c->out_len)) {
        close(c->out);
        c->out = -1;
    }
    if (c->err >= 0 && p[1].revents && !drain(c->err, &c->err_buf, &c->err_len)) {
        close(c->err);
        c->err = -1;
    }
    if (c->in >= 0 && p[2].revents) {
        ssize_t n = write(c->in, c->input, c->input_left);
        if (n > 0) {
            c->input += n;
            c->input_left -= (size_t)n;
        }
        if (n < 0 || c->input_left == 0) {
            close(c->in);
            c->in = -1;
        }
    }
}

/* Reads until stdout holds needle (20 s at most). */
static void wait_for_output(child_t *c, const char *needle)
{
    time_t deadline = time(NULL) + 20;
    while (strstr(c->out_buf, needle) == NULL && c->out >= 0 && time(NULL) <= deadline)
        pump(c, 100);
    if (strstr(c->out_buf, needle) == NULL)
        fail_msg("no \"%s\" from sluice:\n%s\n%s", needle, c->out_buf, c->err_buf);
}

/* Feeds stdin, reads both outputs to their end and reaps the child (60 s at most). */
static cli_res_t finish(child_t *c)
{
    time_t deadline = time(NULL) + 60;
    while (c->out >= 0 || c->err >= 0) {
        pump(c, 1000);
        if (time(NULL) > deadline) {
            kill(c->pid, SIGKILL);
            fail_msg("sluice did not finish:\n%s\n%s", c->out_buf, c->err_buf);
        }
    }
    if (c->in >= 0)
        close(c->in);
    int status;
    assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
    cli_res_t r = {.out = c->out_buf, .err = c->err_buf};
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

static void res_free(cli_res_t *r)
{
    free(r->out);
    free(r->err);
}

#define ARGV_MAX 64

/* argv: sluice [prefix...] args... */
static child_t start_cli(const spawn_opts_t *o, const char *const *prefix, const char *const *args)
{
    const char *argv[ARGV_MAX];
    size_t n = 0;
    argv[n++] = cli_path();
    for (; prefix && *prefix; prefix++)
        argv[n++] = *prefix;
    for (; *args; args++) {
        assert_true(n < ARGV_MAX - 1);
        argv[n++] = *args;
    }
    argv[n] = NULL;
    return spawn(argv, o);
}

static cli_res_t run_with(const spawn_opts_t *o, const char *const *prefix, const char *const *args)
{
    child_t c = start_cli(o, prefix, args);
    return finish(&c);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
/* Runs sluice with --server only / logged in as root (by token, cheap). */
#define SL(...)                                                                                    \
    run_with(&(spawn_opts_t){.stdin_fd = -1}, ARGS("--server", server_arg), ARGS(__VA_ARGS__))
#define ROOT(...)                                                                                  \
    run_with(&(spawn_opts_t){.stdin_fd = -1}, ARGS("--server", server_arg, "-t", root_token),      \
             ARGS(__VA_ARGS__))
#define ROOT_IN(text, ...)                                                                         \
    run_with(&(spawn_opts_t){.input = (text), .stdin_fd = -1},                                     \
             ARGS("--server", server_arg, "-t", root_token), ARGS(__VA_ARGS__))

/* Asserts the exit code, showing the output when it differs. */
static void expect_code(const cli_res_t *r, int code)
{
    if (r->code != code)
        fail_msg("exit code %d, expected %d\nstdout:\n%s\nstderr:\n%s", r->code, code, r->out,
                 r->err);
}

static void expect_has(const char *text, const char *needle)
{
    if (strstr(text, needle) == NULL)
        fail_msg("expected \"%s\" in:\n%s", needle, text);
}

/* Runs, expects code 0, frees: for setup steps. */
static void ok(cli_res_t r)
{
    expect_code(&r, 0);
    res_free(&r);
}

/* --- a small JSON validator ----------------------------------------------------------------- */

static const char *json_value(const char *p, int depth);

static const char *json_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static const char *json_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    while (*p != '"') {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20)
            return NULL; /* control characters must be escaped */
        if (c == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || p[i] == '\0')
                        return NULL;
                p += 4;
            } else if (!strchr("\"\\/bfnrt", *p) || *p == '\0') {
                return NULL;
            }
        }
        p++;
    }
    return p + 1;
}

static const char *json_number(const char *p)
{
    const char *start = p;
    if (*p == '-')
        p++;
    if (*p < '0' || *p > '9')
        return NULL;
    while ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' ||
           (*p == '-' && p > start))
        p++;
    return p;
}

static const char *json_list(const char *p, int depth, char close, bool object)
{
    p = json_ws(p + 1);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (object) {
            p = json_string(json_ws(p));
            if (p == NULL || *(p = json_ws(p)) != ':')
                return NULL;
            p++;
        }
        p = json_value(p, depth + 1);
        if (p == NULL)
            return NULL;
        p = json_ws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
    }
}

static const char *json_value(const char *p, int depth)
{
    if (depth > 32)
        return NULL;
    p = json_ws(p);
    if (*p == '{')
        return json_list(p, depth, '}', true);
    if (*p == '[')
        return json_list(p, depth, ']', false);
    if (*p == '"')
        return json_string(p);
    if (strncmp(p, "true", 4) == 0 || strncmp(p, "null", 4) == 0)
        return p + 4;
    if (strncmp(p, "false", 5) == 0)
        return p + 5;
    return json_number(p);
}

/* The whole text is one JSON document (or, lines, one per line). */
static void expect_json(const char *text, bool lines)
{
    const char *p = text;
    do {
        const char *end = json_value(p, 0);
        if (end == NULL)
            fail_msg("invalid JSON at offset %td:\n%s", p - text, text);
        p = json_ws(end);
    } while (lines && *p != '\0');
    if (*p != '\0')
        fail_msg("trailing text after the JSON document:\n%s", text);
}

/* --- setup --------------------------------------------------------------------------------- */

static int start(void **state)
{
    (void)state;
    if (!th_start(&srv, NULL))
        return -1;
    snprintf(server_arg, sizeof(server_arg), "127.0.0.1:%u", srv.port);
    snprintf(home, sizeof(home), "%s/home", srv.data_dir);
    mkdir(home, 0700);
    /* Most runs log in with a token: Argon2 makes each password login cost
     * tens of milliseconds (more under ASan). */
    sl_client_t *c;
    const char *token;
    if (sl_client_connect("127.0.0.1", srv.port, NULL, &c) != 0 ||
        sl_client_login(c, "iggy", "iggy", NULL) != 0 ||
        sl_client_create_token(c, "cli-test", 0, &token) != 0)
        return -1;
    snprintf(root_token, sizeof(root_token), "%s", token);
    sl_client_close(c);
    return 0;
}

static int stop(void **state)
{
    (void)state;
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
    return 0;
}

/* --- help, usage, version -------------------------------------------------------------------- */

/* The command names listed under "Commands:" in a help text. */
static size_t listed_commands(const char *help, char names[][32], size_t max)
{
    const char *p = strstr(help, "\nCommands:\n");
    size_t n = 0;
    if (p == NULL)
        return 0;
    p += strlen("\nCommands:\n");
    while (n < max && strncmp(p, "  ", 2) == 0) {
        sscanf(p, " %31s", names[n++]);
        p = strchr(p, '\n');
        if (p == NULL)
            break;
        p++;
    }
    return n;
}

static void test_help_everywhere(void **state)
{
    (void)state;
    cli_res_t top = SL("--help");
    expect_code(&top, 0);
    expect_has(top.out, "Usage: sluice [OPTIONS] COMMAND");
    char groups[32][32];
    size_t n = listed_commands(top.out, groups, 32);
    assert_int_equal(n, 19); /* Iggy's command set */
    size_t commands = 0;
    for (size_t i = 0; i < n; i++) {
        cli_res_t g = SL(groups[i], "--help");
        expect_code(&g, 0);
        expect_has(g.out, "Usage: sluice ");
        char subs[16][32];
        size_t m = listed_commands(g.out, subs, 16);
        for (size_t k = 0; k < m; k++) {
            cli_res_t c = SL(groups[i], subs[k], "-h");
            expect_code(&c, 0);
            expect_has(c.out, "Global options:");
            res_free(&c);
            commands++;
        }
        commands += m == 0;
        res_free(&g);
    }
    assert_true(commands >= 45);
    res_free(&top);

    cli_res_t r = SL("help", "message", "poll");
    expect_code(&r, 0);
    expect_has(r.out, "--follow-seconds");
    expect_has(r.out, "Aliases: p");
    res_free(&r);
    r = SL("m", "s", "--help"); /* aliases reach the same command */
    expect_code(&r, 0);
    expect_has(r.out, "sluice message send - send messages to a topic");
    res_free(&r);
    r = SL("--version");
    expect_code(&r, 0);
    expect_has(r.out, "sluice ");
    res_free(&r);
}

static void test_usage_errors(void **state)
{
    (void)state;
    char long_name[301];
    memset(long_name, 'n', 300);
    long_name[300] = '\0';
    const struct {
        const char *const *args;
        const char *message;
    } cases[] = {
        {ARGS("--server", "x"), "Usage: sluice"}, /* no command */
        {ARGS("frobnicate"), "unknown command 'frobnicate'"},
        {ARGS("stream"), "Commands:"},
        {ARGS("stream", "explode"), "unknown command 'stream explode'"},
        {ARGS("stream", "create"), "missing argument NAME"},
        {ARGS("stream", "get", "a", "b"), "unexpected argument 'b'"},
        {ARGS("stream", "list", "--frob"), "unknown option '--frob'"},
        {ARGS("-o", "yaml", "stream", "list"), "invalid value 'yaml' for --output"},
        {ARGS("stream", "list", "--server"), "option --server needs a value"},
        {ARGS("user", "status", "bob", "sleepy"), "invalid STATUS 'sleepy'"},
        {ARGS("--server", "nohost:99999", "-t", "x", "stream", "list"), "invalid server address"},
        {ARGS("--server", "127.0.0.1:1", "stream", "list"), "no credentials"},
        /* Length rules, checked before anything is sent: connecting to the
         * default address with a bogus token would end in exit 3 or 5. */
        {ARGS("-t", "x", "stream", "create", ""), "NAME must be 1..255 bytes (got 0)"},
        {ARGS("-t", "x", "stream", "create", long_name), "NAME must be 1..255 bytes (got 300)"},
        {ARGS("-t", "x", "stream", "get", long_name), "STREAM must be 1..255 bytes (got 300)"},
        {ARGS("-t", "x", "topic", "create", "s", ""), "NAME must be 1..255 bytes (got 0)"},
        {ARGS("-t", "x", "message", "poll", "s", ""), "TOPIC must be 1..255 bytes (got 0)"},
        {ARGS("-t", "x", "user", "create", "cli-pw", "pw"),
         "PASSWORD must be 3..100 bytes (got 2)"},
        {ARGS("-t", "x", "user", "create", "cli-pw", long_name + 199),
         "PASSWORD must be 3..100 bytes (got 101)"},
        {ARGS("-t", "x", "user", "create", "ab", "cli-pw"), "USERNAME must be 3..50 bytes (got 2)"},
        {ARGS("-t", "x", "user", "name", "cli-pw", "ab"), "USERNAME must be 3..50 bytes (got 2)"},
        {ARGS("-t", "x", "user", "password", "cli-pw", "old-pw", "pw"),
         "NEW must be 3..100 bytes (got 2)"},
        {ARGS("-t", "x", "pat", "create", ""), "NAME must be 1..255 bytes (got 0)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cli_res_t r = run_with(&(spawn_opts_t){.stdin_fd = -1}, NULL, cases[i].args);
        expect_code(&r, 2);
        expect_has(r.err, cases[i].message);
        assert_string_equal(r.out, "");
        res_free(&r);
    }
    /* Value errors of the commands themselves, before anything is sent. */
    const struct {
        const char *const *args;
        const char *message;
    } values[] = {
        {ARGS("topic", "create", "s", "t", "many"), "invalid PARTITIONS 'many'"},
        {ARGS("topic", "create", "s", "t", "1", "none", "7 fortnights"), "invalid EXPIRY"},
        {ARGS("message", "send", "s", "t", "-H", "k:int8:300", "x"), "does not fit its kind"},
        {ARGS("message", "send", "s", "t", "-H", "nokind", "x"), "expected KEY:KIND:VALUE"},
        {ARGS("message", "send", "s", "t", "-H", "k:blob:1", "x"), "unknown kind"},
        {ARGS("message", "send", "s", "t", "-p", "1", "-m", "k", "x"), "only one of"},
        {ARGS("message", "poll", "s", "t", "--first", "--last"), "only one of"},
        {ARGS("message", "poll", "s", "t", "--offset", "-5"), "invalid --offset"},
        {ARGS("user", "create", "cli-u", "cli-pw", "-g", "fly"), "unknown global permission"},
        {ARGS("user", "create", "cli-u", "cli-pw", "-s", "x:r_str"), "numeric id"},
    };
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        cli_res_t r = run_with(&(spawn_opts_t){.stdin_fd = -1},
                               ARGS("--server", server_arg, "-t", root_token), values[i].args);
        expect_code(&r, 2);
        expect_has(r.err, values[i].message);
        res_free(&r);
    }
}

/* --- streams, topics, partitions ------------------------------------------------------------- */

static void test_streams(void **state)
{
    (void)state;
    cli_res_t r = ROOT("stream", "create", "cli-orders");
    expect_code(&r, 0);
    expect_has(r.out, "created stream 'cli-orders' with id ");
    res_free(&r);
    r = ROOT("-o", "json", "s", "c", "cli-two");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"name\": \"cli-two\"");
    expect_has(r.out, "\"topics_count\": 0");
    res_free(&r);

    r = ROOT("stream", "list");
    expect_code(&r, 0);
    expect_has(r.out, "ID");
    expect_has(r.out, "NAME");
    expect_has(r.out, "cli-orders");
    expect_has(r.out, "cli-two");
    res_free(&r);
    r = ROOT("--output", "json", "stream", "list");
    expect_code(&r, 0);
    expect_json(r.out, false);
    assert_int_equal(r.out[0], '[');
    expect_has(r.out, "\"name\": \"cli-orders\"");
    res_free(&r);

    ok(ROOT("stream", "update", "cli-two", "cli-2"));
    r = ROOT("-o", "json", "stream", "get", "cli-2");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"topics\": []");
    res_free(&r);
    ok(ROOT("stream", "purge", "cli-2"));
    r = ROOT("-q", "stream", "delete", "cli-2");
    expect_code(&r, 0);
    assert_string_equal(r.out, ""); /* --quiet: no confirmation */
    res_free(&r);
    r = ROOT("stream", "get", "cli-2");
    expect_code(&r, 4);
    expect_has(r.err, "stream 'cli-2' not found");
    res_free(&r);

    /* Names that need escaping stay intact in both formats. */
    ok(ROOT("stream", "create", "quote\"back\\slash\ttab"));
    r = ROOT("-o", "json", "stream", "get", "quote\"back\\slash\ttab");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"name\": \"quote\\\"back\\\\slash\\ttab\"");
    res_free(&r);
    r = ROOT("stream", "list");
    expect_has(r.out, "quote\"back\\slash\\ttab");
    res_free(&r);
    ok(ROOT("stream", "delete", "quote\"back\\slash\ttab"));
}

/* Sealed segments do get deleted: 1 MiB segments, 2.5 MiB of messages. */
static void test_segment_delete(void **state)
{
    (void)state;
    sl_client_t *c;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, NULL, &c), 0);
    assert_int_equal(sl_client_login_token(c, root_token, NULL), 0);
    sl_topic_options_t opt = {.set = SL_TOPIC_OPT_SEGMENT_SIZE, .segment_size = 1024 * 1024};
    assert_int_equal(sl_client_create_stream(c, "cli-seg", NULL), 0);
    assert_int_equal(sl_client_create_topic(c, sl_id_name("cli-seg"), "t", 1, &opt, NULL), 0);
    static uint8_t payload[64 * 1024];
    memset(payload, 'x', sizeof(payload));
    sl_send_message_t m = {.payload = payload, .payload_len = sizeof(payload)};
    for (int i = 0; i < 40; i++) {
        sl_send_result_t sent;
        assert_int_equal(sl_client_send_messages(c, sl_id_name("cli-seg"), sl_id_name("t"),
                                                 sl_partitioning_partition(0), &m, 1, &sent),
                         0);
    }
    const sl_topic_t *t;
    assert_int_equal(sl_client_get_topic(c, sl_id_name("cli-seg"), sl_id_name("t"), &t), 0);
    uint32_t before = t->partitions[0].segments_count;
    assert_true(before >= 3);
    char want[200];
    cli_res_t r = ROOT("-o", "json", "segment", "delete", "cli-seg", "t", "0", "1");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"requested\": 1,\n  \"deleted\": 1,\n");
    snprintf(want, sizeof(want), "\"segments_before\": %u,\n  \"segments_after\": %u\n", before,
             before - 1);
    expect_has(r.out, want);
    res_free(&r);
    snprintf(want, sizeof(want),
             "deleted %u of the 50 segments asked for from partition 0 of "
             "topic 't' of stream 'cli-seg': it had %u segments, it has 1 (the active segment is "
             "never deleted)",
             before - 2, before - 1);
    r = ROOT("segment", "delete", "cli-seg", "t", "0", "50");
    expect_code(&r, 0);
    expect_has(r.out, want);
    res_free(&r);
    assert_int_equal(sl_client_delete_stream(c, sl_id_name("cli-seg")), 0);
    sl_client_close(c);
}

static void test_topics_partitions(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-t"));
    cli_res_t r = ROOT("topic", "create", "cli-t", "events", "3");
    expect_code(&r, 0);
    expect_has(r.out, "created topic 'events' with id ");
    expect_has(r.out, "and 3 partitions");
    res_free(&r);
    ok(ROOT("t", "c", "cli-t", "audit", "1", "gzip", "7d", "--max-topic-size", "1GiB"));
    r = ROOT("-o", "json", "topic", "get", "cli-t", "audit");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"compression\": \"gzip\"");
    expect_has(r.out, "\"message_expiry_us\": 604800000000");
    expect_has(r.out, "\"max_topic_size\": 1073741824");
    expect_has(r.out, "\"partitions\": [\n");
    res_free(&r);
    r = ROOT("topic", "get", "cli-t", "audit");
    expect_has(r.out, "EXPIRY       7d");
    expect_has(r.out, "1.00 GiB");
    res_free(&r);
    /* Expiry words add up; update renames and changes settings. */
    ok(ROOT("topic", "update", "cli-t", "audit", "audit2", "none", "1h", "30m"));
    r = ROOT("-o", "json", "topic", "list", "cli-t");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"name\": \"audit2\"");
    expect_has(r.out, "\"message_expiry_us\": 5400000000");
    res_free(&r);

    ok(ROOT("partition", "create", "cli-t", "events", "2"));
    r = ROOT("-o", "json", "partition", "list", "cli-t", "events");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"id\": 4");
    res_free(&r);
    ok(ROOT("p", "d", "cli-t", "events", "1"));
    r = ROOT("partition", "list", "cli-t", "events");
    assert_null(strstr(r.out, "\n4 "));
    res_free(&r);
    /* DeleteSegments says nothing of what it deleted: the tool reads the
     * count back. Only the active segment exists here. */
    r = ROOT("segment", "delete", "cli-t", "events", "0", "1");
    expect_code(&r, 0);
    expect_has(r.out, "deleted 0 of the 1 segments asked for from partition 0 of topic 'events' "
                      "of stream 'cli-t': it had 1 segment, it has 1 (the active segment is "
                      "never deleted)");
    res_free(&r);
    r = ROOT("segment", "delete", "cli-t", "events", "9", "1");
    expect_code(&r, 4);
    expect_has(r.err, "topic 'events' of stream 'cli-t' has no partition 9");
    res_free(&r);
    ok(ROOT("topic", "purge", "cli-t", "events"));
    ok(ROOT("topic", "delete", "cli-t", "audit2"));
    r = ROOT("topic", "get", "cli-t", "audit2");
    expect_code(&r, 4);
    res_free(&r);
    r = ROOT("topic", "list", "no-such-stream");
    expect_code(&r, 4);
    expect_has(r.err, "stream 'no-such-stream' not found");
    res_free(&r);
    r = ROOT("topic", "create", "no-such-stream", "x");
    expect_code(&r, 4);
    expect_has(r.err, "NotFound]");
    res_free(&r);
}

/* --- messages ----------------------------------------------------------------------------- */

static void test_send_poll_headers(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-m"));
    ok(ROOT("topic", "create", "cli-m", "t", "3"));
    cli_res_t r = ROOT("message", "send", "cli-m", "t", "--partition-id", "1", "hello",
                       "wörld \"quoted\"", "-H", "src:string:web", "-H", "n:uint64:42", "-H",
                       "neg:int8:-5", "-H", "ok:bool:true", "-H", "blob:raw:00ff10", "-H",
                       "f:float64:1.5", "-H", "big:int128:-170141183460469231731687303715884105728",
                       "-H", "u:uint128:340282366920938463463374607431768211455");
    expect_code(&r, 0);
    expect_has(r.out, "sent 2 messages to topic 't' of stream 'cli-m'");
    res_free(&r);

    r = ROOT("-o", "json", "message", "poll", "cli-m", "t", "1", "--offset", "0", "--count", "5");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"partition_id\": 1");
    expect_has(r.out, "\"messages_count\": 2");
    expect_has(r.out, "\"payload\": \"hello\"");
    expect_has(r.out, "\"payload\": \"wörld \\\"quoted\\\"\"");
    expect_has(r.out, "{\"key\": \"src\", \"kind\": \"string\", \"value\": \"web\"}");
    expect_has(r.out, "{\"key\": \"n\", \"kind\": \"uint64\", \"value\": 42}");
    expect_has(r.out, "{\"key\": \"neg\", \"kind\": \"int8\", \"value\": -5}");
    expect_has(r.out, "{\"key\": \"ok\", \"kind\": \"bool\", \"value\": true}");
    expect_has(r.out, "{\"key\": \"blob\", \"kind\": \"raw\", \"value\": \"00ff10\"}");
    expect_has(r.out, "{\"key\": \"f\", \"kind\": \"float64\", \"value\": 1.5}");
    expect_has(r.out, "\"value\": -170141183460469231731687303715884105728}");
    expect_has(r.out, "\"value\": 340282366920938463463374607431768211455}");
    res_free(&r);

    /* The table: payloads, and headers only when asked for. */
    r = ROOT("message", "poll", "cli-m", "t", "1");
    expect_code(&r, 0);
    expect_has(r.out, "OFFSET");
    expect_has(r.out, "wörld \"quoted\"");
    assert_null(strstr(r.out, "src=web"));
    res_free(&r);
    r = ROOT("m", "p", "cli-m", "t", "1", "--show-headers", "-m", "1");
    expect_has(r.out, "src=web, n=42, neg=-5, ok=true, blob=00ff10, f=1.5");
    assert_null(strstr(r.out, "wörld"));
    res_free(&r);

    /* A key always lands on one partition. */
    ok(ROOT("message", "send", "cli-m", "t", "--key", "customer-7", "k1"));
    ok(ROOT("message", "send", "cli-m", "t", "--message-key", "customer-7", "k2"));
    size_t found = 0;
    for (int p = 0; p < 3; p++) {
        char part[4];
        snprintf(part, sizeof(part), "%d", p);
        r = ROOT("-o", "json", "message", "poll", "cli-m", "t", part, "--count", "100");
        expect_json(r.out, false);
        bool k1 = strstr(r.out, "\"payload\": \"k1\"") != NULL;
        bool k2 = strstr(r.out, "\"payload\": \"k2\"") != NULL;
        assert_int_equal(k1, k2);
        found += k1;
        res_free(&r);
    }
    assert_int_equal(found, 1);
}

static void test_poll_strategies(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-ps"));
    ok(ROOT("topic", "create", "cli-ps", "t", "1"));
    ok(ROOT("message", "send", "cli-ps", "t", "m0", "m1", "m2", "m3", "m4"));
    cli_res_t r = ROOT("-o", "json", "message", "poll", "cli-ps", "t", "--offset", "1", "-m", "2");
    expect_json(r.out, false);
    expect_has(r.out, "\"offset\": 1,");
    expect_has(r.out, "\"offset\": 2,");
    assert_null(strstr(r.out, "\"offset\": 3,"));
    res_free(&r);
    r = ROOT("-o", "json", "message", "poll", "cli-ps", "t", "--last", "--count", "1");
    expect_has(r.out, "\"payload\": \"m4\"");
    expect_has(r.out, "\"messages_count\": 1");
    res_free(&r);
    r = ROOT("-o", "json", "message", "poll", "cli-ps", "t", "--first", "--count", "1");
    expect_has(r.out, "\"payload\": \"m0\"");
    res_free(&r);
    /* --timestamp: from an append time (microseconds); 0 is the beginning. */
    r = ROOT("-o", "json", "message", "poll", "cli-ps", "t", "--timestamp", "0", "--count", "10");
    expect_has(r.out, "\"messages_count\": 5");
    res_free(&r);
    /* --next with --auto-commit walks forward for a named consumer. */
    r = ROOT("-o", "json", "m", "p", "cli-ps", "t", "--next", "-c", "reader", "-a", "-m", "2");
    expect_has(r.out, "\"payload\": \"m0\"");
    expect_has(r.out, "\"payload\": \"m1\"");
    res_free(&r);
    r = ROOT("-o", "json", "m", "p", "cli-ps", "t", "--next", "-c", "reader", "-a", "-m", "2");
    expect_has(r.out, "\"payload\": \"m2\"");
    expect_has(r.out, "\"payload\": \"m3\"");
    res_free(&r);
    r = ROOT("consumer-offset", "get", "reader", "cli-ps", "t", "0");
    expect_code(&r, 0);
    expect_has(r.out, "STORED OFFSET   3");
    res_free(&r);
    /* Past the end: nothing, and an empty list in JSON. */
    r = ROOT("message", "poll", "cli-ps", "t", "--offset", "100");
    expect_code(&r, 0);
    expect_has(r.out, "no messages");
    res_free(&r);
    r = ROOT("-o", "json", "message", "poll", "cli-ps", "t", "--offset", "100");
    expect_json(r.out, false);
    expect_has(r.out, "\"messages\": []");
    res_free(&r);
}

static void test_send_stdin(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-in"));
    ok(ROOT("topic", "create", "cli-in", "t", "1"));
    /* 2500 lines in batches of 1000; an empty line is an empty message; the
     * last line needs no newline. */
    size_t cap = 2500 * 16;
    char *input = malloc(cap);
    size_t len = 0;
    for (int i = 0; i < 2498; i++)
        len += (size_t)snprintf(input + len, cap - len, "line %d\n", i);
    len += (size_t)snprintf(input + len, cap - len, "\nlast");
    cli_res_t r =
        ROOT_IN(input, "-o", "json", "message", "send", "cli-in", "t", "--batch-size", "1000");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"messages_count\": 2500");
    expect_has(r.out, "{\"partition_id\": 0, \"base_offset\": 2000, \"messages_count\": 500}");
    res_free(&r);
    free(input);
    r = ROOT("-o", "json", "message", "poll", "cli-in", "t", "--offset", "2497", "-m", "10");
    expect_has(r.out, "\"payload\": \"line 2497\"");
    expect_has(r.out, "\"offset\": 2498, \"timestamp_us\"");
    expect_has(r.out, "\"payload_size\": 0, \"headers\": [], \"payload\": \"\"}");
    expect_has(r.out, "\"payload\": \"last\"");
    res_free(&r);

    /* Bytes that are not UTF-8 come back as hex in JSON and escaped in a table. */
    static const char binary[] = {'a', 0x01, (char)0xff, '\t', 'z'};
    r = run_with(&(spawn_opts_t){.input = binary, .input_len = sizeof(binary), .stdin_fd = -1},
                 ARGS("--server", server_arg, "-t", root_token),
                 ARGS("message", "send", "cli-in", "t"));
    expect_code(&r, 0);
    res_free(&r);
    r = ROOT("-o", "json", "message", "poll", "cli-in", "t", "--last", "-m", "1");
    expect_json(r.out, false);
    expect_has(r.out, "\"payload\": null, \"payload_hex\": \"6101ff097a\"");
    res_free(&r);
    r = ROOT("message", "poll", "cli-in", "t", "--last", "-m", "1");
    expect_has(r.out, "a\\x01\\xff\\tz");
    res_free(&r);
    /* Nothing on stdin and no arguments: a usage error. */
    r = ROOT_IN("", "message", "send", "cli-in", "t");
    expect_code(&r, 2);
    expect_has(r.err, "no messages to send");
    res_free(&r);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_follow(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-f"));
    ok(ROOT("topic", "create", "cli-f", "t", "1"));
    ok(ROOT("message", "send", "cli-f", "t", "before"));
    /* A follower sees what exists and what arrives, then stops on time. */
    uint64_t t0 = now_ms();
    child_t c =
        start_cli(&(spawn_opts_t){.stdin_fd = -1}, ARGS("--server", server_arg, "-t", root_token),
                  ARGS("-o", "json", "message", "poll", "cli-f", "t", "--follow-seconds", "3",
                       "--interval-ms", "20"));
    wait_for_output(&c, "\"payload\": \"before\"");
    ok(ROOT("message", "send", "cli-f", "t", "during-1", "during-2"));
    cli_res_t r = finish(&c);
    uint64_t took = now_ms() - t0;
    expect_code(&r, 0);
    expect_json(r.out, true); /* one object per line */
    expect_has(r.out, "\"payload\": \"before\"}\n");
    expect_has(r.out, "\"payload\": \"during-1\"}\n");
    expect_has(r.out, "\"payload\": \"during-2\"}\n");
    assert_true(took >= 2900 && took < 20000);
    res_free(&r);

    /* Without a time limit, SIGINT ends it with exit code 0. */
    c = start_cli(&(spawn_opts_t){.stdin_fd = -1}, ARGS("--server", server_arg, "-t", root_token),
                  ARGS("message", "poll", "cli-f", "t", "--follow"));
    wait_for_output(&c, "during-2"); /* it is polling: the handler is in place */
    kill(c.pid, SIGINT);
    r = finish(&c);
    expect_code(&r, 0);
    expect_has(r.out, "OFFSET");
    expect_has(r.out, "during-2");
    res_free(&r);
}

/* --- consumer groups and offsets ------------------------------------------------------------ */

static void test_groups_offsets(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-g"));
    ok(ROOT("topic", "create", "cli-g", "t", "2"));
    cli_res_t r = ROOT("consumer-group", "create", "cli-g", "t", "billing");
    expect_code(&r, 0);
    expect_has(r.out, "created consumer group 'billing' with id ");
    res_free(&r);
    r = ROOT("-o", "json", "g", "c", "cli-g", "t", "audit");
    expect_json(r.out, false);
    expect_has(r.out, "\"name\": \"audit\"");
    expect_has(r.out, "\"partitions_count\": 2");
    expect_has(r.out, "\"members\": []");
    res_free(&r);
    r = ROOT("consumer-group", "list", "cli-g", "t");
    expect_has(r.out, "billing");
    expect_has(r.out, "audit");
    res_free(&r);
    r = ROOT("-o", "json", "consumer-group", "get", "cli-g", "t", "billing");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"members_count\": 0");
    res_free(&r);
    r = ROOT("consumer-group", "create", "cli-g", "t", "billing");
    expect_code(&r, 1);
    expect_has(r.err, "AlreadyExists]");
    res_free(&r);
    ok(ROOT("consumer-group", "delete", "cli-g", "t", "audit"));
    r = ROOT("consumer-group", "get", "cli-g", "t", "audit");
    expect_code(&r, 4);
    expect_has(r.err, "topic 't' of stream 'cli-g' has no consumer group 'audit'");
    res_free(&r);
    r = ROOT("consumer-group", "list", "cli-g", "no-topic");
    expect_code(&r, 4);
    expect_has(r.err, "stream 'cli-g' has no topic 'no-topic'");
    res_free(&r);

    ok(ROOT("message", "send", "cli-g", "t", "-p", "1", "a", "b", "c"));
    r = ROOT("consumer-offset", "set", "billing", "cli-g", "t", "1", "1");
    expect_code(&r, 0);
    expect_has(r.out, "stored offset 1 for consumer 'billing' in partition 1");
    res_free(&r);
    r = ROOT("-o", "json", "o", "g", "billing", "cli-g", "t", "1");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"stored_offset\": 1");
    expect_has(r.out, "\"current_offset\": 2");
    res_free(&r);
    r = ROOT("consumer-offset", "set", "billing", "cli-g", "t", "1", "99");
    expect_code(&r, 1);
    expect_has(r.err, "invalid offset (4100) [InvalidOffset]");
    res_free(&r);
    ok(ROOT("consumer-offset", "delete", "billing", "cli-g", "t", "1"));
    r = ROOT("consumer-offset", "get", "billing", "cli-g", "t", "1");
    expect_code(&r, 4);
    expect_has(r.err, "no offset stored for consumer 'billing' in partition 1");
    res_free(&r);
    r = ROOT("consumer-offset", "delete", "billing", "cli-g", "t", "1");
    expect_code(&r, 4);
    expect_has(r.err, "[ConsumerOffsetNotFound]");
    res_free(&r);
}

/* --- users and tokens ---------------------------------------------------------------------- */

static void test_users(void **state)
{
    (void)state;
    cli_res_t r = ROOT("user", "create", "cli-alice", "secret-1", "-g", "read_streams,p_msg", "-s",
                       "0:r_str,s_msg#0:p_msg", "--stream-permissions", "1");
    expect_code(&r, 0);
    expect_has(r.out, "created user 'cli-alice' with id ");
    res_free(&r);
    r = ROOT("-o", "json", "user", "get", "cli-alice");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"status\": \"active\"");
    expect_has(r.out, "\"global_permissions\": [\"read_streams\", \"poll_messages\"]");
    expect_has(r.out, "{\"stream_id\": 0, \"topic_id\": null, \"permissions\": "
                      "[\"read_stream\", \"send_messages\"]}");
    expect_has(r.out, "{\"stream_id\": 0, \"topic_id\": 0, \"permissions\": [\"poll_messages\"]}");
    expect_has(r.out, "{\"stream_id\": 1, \"topic_id\": null, \"permissions\": []}");
    res_free(&r);
    r = ROOT("user", "list");
    expect_has(r.out, "USERNAME");
    expect_has(r.out, "iggy");
    expect_has(r.out, "cli-alice");
    res_free(&r);

    /* The user logs in with a password; a wrong one is exit 5. */
    r = SL("-u", "cli-alice", "-p", "secret-1", "-o", "json", "me");
    expect_code(&r, 0);
    expect_json(r.out, false);
    res_free(&r);
    ok(ROOT("user", "password", "cli-alice", "secret-1", "secret-2"));
    r = SL("-u", "cli-alice", "-p", "secret-1", "stream", "list");
    expect_code(&r, 5);
    expect_has(r.err, "log in as 'cli-alice': invalid credentials (42) [InvalidCredentials]");
    res_free(&r);
    /* Without manage_streams: exit 6. */
    r = SL("-u", "cli-alice", "-p", "secret-2", "stream", "create", "cli-denied");
    expect_code(&r, 6);
    expect_has(r.err, "unauthorized (41) [Unauthorized]");
    res_free(&r);
    ok(ROOT("user", "permissions", "cli-alice", "-g", "m_str"));
    ok(SL("-u", "cli-alice", "-p", "secret-2", "stream", "create", "cli-allowed"));

    ok(ROOT("user", "name", "cli-alice", "cli-alicia"));
    ok(ROOT("user", "status", "cli-alicia", "inactive"));
    r = ROOT("user", "get", "cli-alicia");
    expect_has(r.out, "inactive");
    expect_has(r.out, "manage_streams");
    res_free(&r);
    r = SL("-u", "cli-alicia", "-p", "secret-2", "stream", "list");
    expect_code(&r, 5);
    res_free(&r);
    ok(ROOT("user", "delete", "cli-alicia"));
    r = ROOT("user", "get", "cli-alicia");
    expect_code(&r, 4);
    res_free(&r);
}

static void test_tokens(void **state)
{
    (void)state;
    cli_res_t r = SL("-u", "iggy", "-p", "iggy", "-q", "pat", "create", "cli-ci");
    expect_code(&r, 0);
    char token[256];
    snprintf(token, sizeof(token), "%s", r.out);
    token[strcspn(token, "\n")] = '\0';
    assert_true(strlen(token) > 20);
    res_free(&r);
    /* Log in with it: flag and environment. */
    r = SL("-t", token, "-o", "json", "me");
    expect_code(&r, 0);
    expect_has(r.out, "\"user_id\": 0");
    res_free(&r);
    char env_token[300];
    snprintf(env_token, sizeof(env_token), "SLUICE_TOKEN=%s", token);
    r = run_with(&(spawn_opts_t){.stdin_fd = -1, .env = ARGS(env_token)},
                 ARGS("--server", server_arg), ARGS("stream", "list"));
    expect_code(&r, 0);
    res_free(&r);

    r = ROOT("-o", "json", "pat", "create", "cli-day", "1d");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"name\": \"cli-day\"");
    expect_has(r.out, "\"token\": \"");
    res_free(&r);
    r = ROOT("-o", "json", "pat", "list");
    expect_json(r.out, false);
    expect_has(r.out, "{\"name\": \"cli-ci\", \"expiry_at_us\": null}");
    expect_has(r.out, "{\"name\": \"cli-day\", \"expiry_at_us\": ");
    res_free(&r);
    ok(ROOT("pat", "delete", "cli-ci"));
    ok(ROOT("pat", "delete", "cli-day"));
    r = SL("-t", token, "stream", "list");
    expect_code(&r, 5);
    expect_has(r.err, "[InvalidPersonalAccessToken]");
    res_free(&r);
}

/* --- errors ---------------------------------------------------------------------------------- */

static void test_error_codes(void **state)
{
    (void)state;
    cli_res_t r = ROOT("stream", "create", "cli-dup");
    expect_code(&r, 0);
    res_free(&r);
    r = ROOT("stream", "create", "cli-dup");
    expect_code(&r, 1);
    expect_has(r.err, "sluice: error: create stream 'cli-dup': stream name already exists "
                      "(1012) [StreamNameAlreadyExists]");
    res_free(&r);
    r = ROOT("stream", "delete", "4000000");
    expect_code(&r, 4);
    expect_has(r.err, "stream id not found (1009) [StreamIdNotFound]");
    res_free(&r);
    r = ROOT("message", "send", "cli-missing", "t", "x");
    expect_code(&r, 4);
    expect_has(r.err, "send messages to topic 't' of stream 'cli-missing'");
    expect_has(r.err, "[ResourceNotFound]");
    res_free(&r);
    /* Offered for parity with Iggy's CLI; help and error say 0.11.0 servers refuse it. */
    r = ROOT("message", "flush", "cli-dup", "t", "0");
    expect_code(&r, 1);
    expect_has(r.err, "feature unavailable (5) [FeatureUnavailable]; protocol 0.11.0 servers "
                      "(sluiced, Apache Iggy) do not offer FlushUnsavedBuffer");
    res_free(&r);
    r = SL("message", "flush", "--help");
    expect_code(&r, 0);
    expect_has(r.out, "(0.11.0 servers refuse it)");
    expect_has(r.out, "always answer\nFeatureUnavailable (5), and the command then exits 1");
    res_free(&r);
    r = SL("-u", "iggy", "-p", "wrong", "stream", "list");
    expect_code(&r, 5);
    expect_has(r.err, "[InvalidCredentials]");
    res_free(&r);

    /* Nothing listens on port 1: exit 3. */
    r = run_with(&(spawn_opts_t){.stdin_fd = -1}, ARGS("--server", "127.0.0.1:1", "-t", "x"),
                 ARGS("ping"));
    expect_code(&r, 3);
    expect_has(r.err, "connect to 127.0.0.1:1: cannot establish connection (9)");
    res_free(&r);
}

/* Errors name the object the user typed and the rule that refused it;
 * the codes and exit codes stay the protocol's. */
static void expect_error(cli_res_t r, int code, const char *message)
{
    expect_code(&r, code);
    expect_has(r.err, message);
    res_free(&r);
}

static void test_error_messages(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-err"));
    ok(ROOT("topic", "create", "cli-err", "t", "1"));
    ok(ROOT("message", "send", "cli-err", "t", "x"));
    /* Polls: which of stream, topic and partition is missing. */
    expect_error(ROOT("message", "poll", "cli-err", "nope"), 4,
                 "sluice: error: poll messages from partition 0 of topic 'nope' of stream "
                 "'cli-err': topic id not found (2010) [TopicIdNotFound]; stream 'cli-err' has no "
                 "topic 'nope'\n");
    expect_error(ROOT("message", "poll", "no-stream", "t"), 4,
                 "stream id not found (1009) [StreamIdNotFound]; stream 'no-stream' not found");
    expect_error(ROOT("message", "poll", "cli-err", "t", "7"), 4,
                 "partition not found (3007) [PartitionNotFound]; topic 't' of stream 'cli-err' "
                 "has no partition 7 (it has 1)");
    /* Sends: ResourceNotFound (20) says nothing; the tool finds out. */
    expect_error(ROOT("message", "send", "cli-err", "nope", "x"), 4,
                 "send messages to topic 'nope' of stream 'cli-err': resource not found (20) "
                 "[ResourceNotFound]; stream 'cli-err' has no topic 'nope'");
    expect_error(ROOT("message", "send", "no-stream", "t", "x"), 4,
                 "[ResourceNotFound]; stream 'no-stream' not found");
    expect_error(ROOT("message", "send", "cli-err", "t", "--partition-id", "5", "x"), 4,
                 "[ResourceNotFound]; topic 't' of stream 'cli-err' has no partition 5 (it has 1)");
    expect_error(ROOT("topic", "get", "no-stream", "t"), 4,
                 "sluice: error: stream 'no-stream' not found\n");
    expect_error(ROOT("partition", "list", "cli-err", "nope"), 4,
                 "sluice: error: stream 'cli-err' has no topic 'nope'\n");
    expect_error(ROOT("consumer-group", "delete", "cli-err", "t", "nope"), 4,
                 "[ConsumerGroupIdNotFound]; topic 't' of stream 'cli-err' has no consumer group "
                 "'nope'");
    expect_error(ROOT("consumer-offset", "get", "c1", "cli-err", "t", "3"), 4,
                 "topic 't' of stream 'cli-err' has no partition 3 (it has 1)");
    expect_error(ROOT("consumer-offset", "set", "c1", "cli-err", "t", "0", "9"), 1,
                 "store the offset of consumer 'c1' in partition 0 of topic 't' of stream "
                 "'cli-err': invalid offset (4100) [InvalidOffset]; an offset can be stored only "
                 "up to the partition's current offset");
    /* A group's offset is written only by the member holding the partition. */
    ok(ROOT("consumer-group", "create", "cli-err", "t", "cli-eg"));
    expect_error(
        ROOT("consumer-offset", "set", "cli-eg", "cli-err", "t", "0", "0", "-k", "consumer-group"),
        4,
        "[ResourceNotFound]; only the group member the partition is assigned to may "
        "write its offset");
    expect_error(
        ROOT("consumer-offset", "delete", "nope", "cli-err", "t", "0", "-k", "consumer-group"), 4,
        "[ResourceNotFound]; topic 't' of stream 'cli-err' has no consumer group 'nope'");
    /* Numbers with a rule say it before anything is sent. */
    expect_error(ROOT("partition", "create", "cli-err", "t", "0"), 2,
                 "invalid COUNT '0' (a number, 1..1000)");
    expect_error(ROOT("topic", "create", "cli-err", "t2", "1001"), 2,
                 "invalid PARTITIONS '1001' (a number, 0..1000)");

    ok(ROOT("stream", "delete", "cli-err"));
}

static void test_error_messages_users(void **state)
{
    (void)state;
    /* The missing user, the root user's guards, the permission. */
    expect_error(
        ROOT("user", "delete", "ghost"), 4,
        "delete user 'ghost': resource not found (20) [ResourceNotFound]; no user 'ghost'");
    expect_error(ROOT("user", "delete", "0"), 1,
                 "cannot delete user (48) [CannotDeleteUser]; the root user (id 0) cannot be "
                 "deleted");
    ok(ROOT("user", "create", "cli-boss", "boss-pass", "-g", "m_usr,r_usr"));
    ok(ROOT("user", "create", "cli-temp", "temp-pass"));
    expect_error(SL("-u", "cli-boss", "-p", "boss-pass", "user", "name", "iggy", "owned"), 6,
                 "rename user 'iggy': unauthorized (41) [Unauthorized]; only the root user may "
                 "rename the root user or set it inactive");
    expect_error(SL("-u", "cli-boss", "-p", "boss-pass", "user", "status", "0", "inactive"), 6,
                 "only the root user may rename the root user or set it inactive");
    expect_error(SL("-u", "cli-temp", "-p", "temp-pass", "user", "status", "cli-boss", "inactive"),
                 6, "[Unauthorized]; this needs the manage_users permission");
    expect_error(ROOT("user", "password", "cli-temp", "not-it", "new-pass"), 5,
                 "invalid credentials (42) [InvalidCredentials]; the current password is wrong");
    expect_error(SL("-u", "cli-temp", "-p", "wrong-pass", "me"), 5,
                 "log in as 'cli-temp': invalid credentials (42) [InvalidCredentials]; wrong "
                 "username or password, or the user is inactive");
    ok(ROOT("user", "status", "cli-temp", "inactive"));
    expect_error(SL("-u", "cli-temp", "-p", "temp-pass", "me"), 5,
                 "; wrong username or password, or the user is inactive");
    expect_error(SL("-t", "not-a-token", "me"), 5,
                 "[InvalidPersonalAccessToken]; the token is unknown, expired or deleted");
    expect_error(ROOT("pat", "delete", "no-such-token"), 4,
                 "[ResourceNotFound]; this user has no token by that name");
    ok(ROOT("user", "delete", "cli-temp"));
    ok(ROOT("user", "delete", "cli-boss"));
}

/* A payload over the limit: the size and the limit. */
static void test_error_message_payload(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-big"));
    ok(ROOT("topic", "create", "cli-big", "t", "1"));
    char path[600];
    snprintf(path, sizeof(path), "%s/big.txt", home);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    static char chunk[1 << 20];
    memset(chunk, 'b', sizeof(chunk));
    size_t left = 64000001;
    while (left > 0) {
        size_t n = left < sizeof(chunk) ? left : sizeof(chunk);
        assert_int_equal(fwrite(chunk, 1, n, f), n);
        left -= n;
    }
    assert_int_equal(fclose(f), 0);
    expect_error(
        ROOT("message", "send", "cli-big", "t", "--input-file", path, "--file-format", "lines"), 1,
        "add message 1: too big message payload (4022) [TooBigMessagePayload]; its "
        "payload is 64000001 bytes, at most 64000000 are allowed");
    unlink(path);
    ok(ROOT("stream", "delete", "cli-big"));
}

/* --- contexts, environment, login sessions --------------------------------------------------- */

static void write_home_file(const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/.sluice", home);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/.sluice/%s", home, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void remove_home_file(const char *name)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/.sluice/%s", home, name);
    unlink(path);
}

static cli_res_t bare(const char *const *env, const char *const *args)
{
    return run_with(&(spawn_opts_t){.stdin_fd = -1, .env = env}, NULL, args);
}

static void test_contexts(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof(text),
             "# test contexts\n[default]\nserver = \"127.0.0.1:1\"\n\n"
             "[dev]\nserver = \"%s\"   # the test server\nusername = \"iggy\"\n"
             "password = 'iggy'\n\n[\"tok\"]\nserver = \"%s\"\ntoken = \"%s\"\n",
             server_arg, server_arg, root_token);
    write_home_file("contexts.toml", text);
    cli_res_t r = bare(NULL, ARGS("--context", "dev", "stream", "list"));
    expect_code(&r, 0);
    res_free(&r);
    r = bare(ARGS("SLUICE_CONTEXT=tok"), ARGS("-o", "json", "me"));
    expect_code(&r, 0);
    expect_has(r.out, "\"user_id\": 0");
    res_free(&r);
    /* The default context points nowhere. */
    r = bare(NULL, ARGS("ping"));
    expect_code(&r, 3);
    res_free(&r);
    r = bare(NULL, ARGS("context", "use", "dev"));
    expect_code(&r, 0);
    expect_has(r.out, "active context is now 'dev'");
    res_free(&r);
    r = bare(NULL, ARGS("stream", "list"));
    expect_code(&r, 0);
    res_free(&r);
    r = bare(NULL, ARGS("-o", "json", "context", "list"));
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "{\"name\": \"dev\", \"active\": true, \"server\": \"");
    expect_has(r.out, "\"username\": \"iggy\", \"auth\": \"password\"}");
    expect_has(r.out, "{\"name\": \"tok\", \"active\": false");
    assert_null(strstr(r.out, root_token)); /* secrets are not shown */
    res_free(&r);
    r = bare(NULL, ARGS("context", "use", "nope"));
    expect_code(&r, 4);
    expect_has(r.err, "context 'nope' not found");
    res_free(&r);
    r = bare(NULL, ARGS("--context", "nope", "stream", "list"));
    expect_code(&r, 4);
    res_free(&r);
    ok(bare(NULL, ARGS("context", "use", "default")));

    /* Iggy's IGGY_TCP_SERVER_ADDRESS: it wins over the context (the default
     * one points nowhere), the flag wins over it, SLUICE_SERVER too. */
    char iggy_env[100], sluice_env[100];
    snprintf(iggy_env, sizeof(iggy_env), "IGGY_TCP_SERVER_ADDRESS=%s", server_arg);
    snprintf(sluice_env, sizeof(sluice_env), "SLUICE_SERVER=%s", server_arg);
    r = bare(ARGS(iggy_env), ARGS("-t", root_token, "stream", "list"));
    expect_code(&r, 0);
    res_free(&r);
    r = bare(ARGS("IGGY_TCP_SERVER_ADDRESS=127.0.0.1:1"),
             ARGS("--server", server_arg, "-t", root_token, "stream", "list"));
    expect_code(&r, 0);
    res_free(&r);
    r = bare(ARGS("IGGY_TCP_SERVER_ADDRESS=127.0.0.1:1", sluice_env),
             ARGS("-t", root_token, "stream", "list"));
    expect_code(&r, 0);
    res_free(&r);
    r = bare(ARGS("IGGY_TCP_SERVER_ADDRESS=127.0.0.1:1"), ARGS("-t", root_token, "ping"));
    expect_code(&r, 3);
    expect_has(r.err, "connect to 127.0.0.1:1");
    res_free(&r);

    /* Environment credentials (Iggy's names too). */
    r = SL("stream", "list");
    expect_code(&r, 2);
    expect_has(r.err, "no credentials");
    res_free(&r);
    r = run_with(&(spawn_opts_t){.stdin_fd = -1,
                                 .env = ARGS("SLUICE_USERNAME=iggy", "SLUICE_PASSWORD=iggy")},
                 ARGS("--server", server_arg), ARGS("stream", "list"));
    expect_code(&r, 0);
    res_free(&r);
    r = run_with(
        &(spawn_opts_t){.stdin_fd = -1, .env = ARGS("IGGY_USERNAME=iggy", "IGGY_PASSWORD=nope")},
        ARGS("--server", server_arg), ARGS("stream", "list"));
    expect_code(&r, 5);
    res_free(&r);

    write_home_file("contexts.toml", "[broken\nserver = 1\n");
    r = bare(NULL, ARGS("context", "list"));
    expect_code(&r, 7);
    expect_has(r.err, "contexts.toml:1: expected ']'");
    res_free(&r);
    remove_home_file("contexts.toml");
    remove_home_file("active_context");
}

static void test_login_logout(void **state)
{
    (void)state;
    cli_res_t r = SL("-u", "iggy", "-p", "iggy", "login", "1h");
    expect_code(&r, 0);
    expect_has(r.out, "logged in to ");
    res_free(&r);
    char path[600];
    snprintf(path, sizeof(path), "%s/.sluice/session.toml", home);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600); /* it holds a token */
    r = SL("-o", "json", "me");
    expect_code(&r, 0);
    res_free(&r);
    r = ROOT("-o", "json", "pat", "list");
    expect_has(r.out, "\"name\": \"sluice-cli-session\"");
    res_free(&r);
    r = SL("logout");
    expect_code(&r, 0);
    expect_has(r.out, "logged out of ");
    res_free(&r);
    assert_int_not_equal(stat(path, &st), 0);
    r = ROOT("-o", "json", "pat", "list");
    assert_null(strstr(r.out, "sluice-cli-session"));
    res_free(&r);
    r = SL("stream", "list");
    expect_code(&r, 2);
    res_free(&r);
    r = SL("logout");
    expect_code(&r, 0);
    expect_has(r.out, "not logged in");
    res_free(&r);
}

/* --- the password prompt on a terminal ----------------------------------------------------------
 */

/* Reads what the terminal echoed within ms. */
static size_t read_echo(int master, char *buf, size_t cap, int ms)
{
    size_t n = 0;
    struct pollfd p = {master, POLLIN, 0};
    while (n + 1 < cap && poll(&p, 1, ms) > 0) {
        ssize_t k = read(master, buf + n, cap - 1 - n);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    return n;
}

static void test_password_prompt(void **state)
{
    (void)state;
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0)
        skip(); /* no pseudo-terminals here */
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    assert_true(slave >= 0);
    child_t c = start_cli(&(spawn_opts_t){.stdin_fd = slave}, ARGS("--server", server_arg),
                          ARGS("-u", "iggy", "stream", "list"));
    close(slave);
    /* The prompt goes to stderr; the answer is typed on the terminal. */
    time_t deadline = time(NULL) + 20;
    while (strstr(c.err_buf, "Password for iggy: ") == NULL && time(NULL) <= deadline)
        pump(&c, 100);
    expect_has(c.err_buf, "Password for iggy: ");
    assert_int_equal(write(master, "iggy\n", 5), 5);
    char echo[256];
    read_echo(master, echo, sizeof(echo), 500);
    cli_res_t r = finish(&c);
    expect_code(&r, 0);
    expect_has(r.out, "NAME");
    assert_null(strstr(echo, "iggy")); /* not echoed */
    res_free(&r);
    close(master);

    /* Not a terminal: no prompt, a clear error instead. */
    r = run_with(&(spawn_opts_t){.input = "iggy\n", .stdin_fd = -1}, ARGS("--server", server_arg),
                 ARGS("-u", "iggy", "stream", "list"));
    expect_code(&r, 2);
    expect_has(r.err, "no password for 'iggy'");
    res_free(&r);
}

/* --- completion and the system commands ----------------------------------------------------------
 */

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *text = NULL;
    size_t len = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        text = realloc(text, len + n + 1);
        memcpy(text + len, chunk, n);
        len += n;
        text[len] = '\0';
    }
    fclose(f);
    return text;
}

static void test_completion(void **state)
{
    (void)state;
    cli_res_t r = SL("--generate", "bash");
    expect_code(&r, 0);
    expect_has(r.out, "complete -o default -F _sluice sluice");
    const char *script = getenv("SLUICE_COMPLETION_SCRIPT");
    assert_non_null(script);
    char *committed = read_file(script);
    assert_non_null(committed);
    /* The committed script is exactly what the command table generates. */
    if (strcmp(committed, r.out) != 0)
        fail_msg("%s is stale: regenerate it with `sluice --generate bash`", script);
    free(committed);
    res_free(&r);
    if (access("/bin/bash", X_OK) != 0)
        return;
    static const struct {
        const char *words;
        const char *expect;
    } cases[] = {
        {"sluice \"\"", "stream topic partition segment message consumer-group"},
        {"sluice stream \"\"", "create delete update get list purge"},
        {"sluice -u iggy -p x s \"\"", "create delete update get list purge"},
        {"sluice -o \"\"", "table json"},
        {"sluice message send -p 1 s t --he", "--header --headers --help"},
        {"sluice user status bob \"\"", "active inactive"},
        {"sluice consumer-offset get -k \"\"", "consumer consumer-group"},
        {"sluice options \"\"", "topic stream user"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char cmd[1024];
        snprintf(cmd, sizeof(cmd),
                 "source '%s'; COMP_WORDS=(%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _sluice; "
                 "echo \"${COMPREPLY[*]}\"",
                 script, cases[i].words);
        child_t c = spawn(ARGS("/bin/bash", "-c", cmd), &(spawn_opts_t){.stdin_fd = -1});
        r = finish(&c);
        expect_code(&r, 0);
        expect_has(r.out, cases[i].expect);
        res_free(&r);
    }
}

static void test_reference_doc(void **state)
{
    (void)state;
    cli_res_t r = SL("--generate", "markdown");
    expect_code(&r, 0);
    expect_has(r.out, "| `message poll` | p | STREAM TOPIC [PARTITION] |");
    const char *path = getenv("SLUICE_CLI_DOC");
    assert_non_null(path);
    char *doc = read_file(path);
    assert_non_null(doc);
    static const char begin[] = "<!-- BEGIN GENERATED: sluice commands -->\n";
    char *start = strstr(doc, begin), *end = strstr(doc, "<!-- END GENERATED: sluice commands -->");
    assert_non_null(start);
    assert_non_null(end);
    start += strlen(begin);
    *end = '\0';
    if (strcmp(start, r.out) != 0)
        fail_msg("the command reference in %s is stale: paste `sluice --generate markdown`", path);
    free(doc);
    res_free(&r);
}

/* --transport websocket reaches the WebSocket door: the server lists the
 * connection as WebSocket. */
static void test_websocket_transport(void **state)
{
    (void)state;
    char ws_server[64];
    snprintf(ws_server, sizeof(ws_server), "127.0.0.1:%u", srv.ws_port);
    cli_res_t r = run_with(
        &(spawn_opts_t){.stdin_fd = -1},
        ARGS("--transport", "websocket", "--server", ws_server, "-t", root_token), ARGS("me"));
    expect_code(&r, 0);
    expect_has(r.out, "TRANSPORT  websocket");
    res_free(&r);
    /* The TCP port does not speak WebSocket: the upgrade is refused. */
    r = run_with(&(spawn_opts_t){.stdin_fd = -1},
                 ARGS("--transport", "websocket", "--server", server_arg, "-t", root_token),
                 ARGS("me"));
    expect_has(r.err, "WebSocketConnectionError");
    res_free(&r);
}

static void test_system_commands(void **state)
{
    (void)state;
    cli_res_t r = SL("ping", "--count", "2"); /* needs no credentials */
    expect_code(&r, 0);
    expect_has(r.out, "TIME (ms)");
    res_free(&r);
    const char *const *const json_cmds[] = {
        ARGS("ping"),           ARGS("me"),
        ARGS("stats"),          ARGS("cluster", "metadata"),
        ARGS("client", "list"), ARGS("options", "topic"),
        ARGS("user", "list"),   ARGS("pat", "list"),
        ARGS("stream", "list"),
    };
    for (size_t i = 0; i < sizeof(json_cmds) / sizeof(json_cmds[0]); i++) {
        r = run_with(&(spawn_opts_t){.stdin_fd = -1},
                     ARGS("--server", server_arg, "-t", root_token, "-o", "json"), json_cmds[i]);
        expect_code(&r, 0);
        expect_json(r.out, false);
        res_free(&r);
    }
    r = ROOT("stats");
    expect_has(r.out, "Server version");
    res_free(&r);
    r = ROOT("-o", "json", "options", "topic");
    expect_has(r.out, "\"key\": \"segment_size\", \"kind\": \"uint64\", \"default\": ");
    res_free(&r);
    r = ROOT("cluster", "metadata");
    expect_has(r.out, "leader");
    res_free(&r);
    r = ROOT("client", "get", "4000000000");
    expect_code(&r, 4);
    res_free(&r);

    r = ROOT("-o", "json", "snapshot", "-c", "stored", "-s", "test", "--out-dir", home);
    expect_code(&r, 0);
    expect_json(r.out, false);
    char *path = strstr(r.out, "\"path\": \"");
    assert_non_null(path);
    path += strlen("\"path\": \"");
    *strchr(path, '"') = '\0';
    char *zip = read_file(path);
    assert_non_null(zip);
    assert_memory_equal(zip, "PK", 2);
    free(zip);
    unlink(path);
    res_free(&r);
    r = ROOT("snapshot", "-s", "nonsense");
    expect_code(&r, 2);
    res_free(&r);
    /* sluiced cannot write zstd archives (Debian's libzip): the error says so. */
    r = ROOT("snapshot", "-c", "zstd", "-s", "test", "--out-dir", home);
    expect_code(&r, 1);
    expect_has(r.err, "get a zstd snapshot: feature unavailable (5) [FeatureUnavailable]; the "
                      "server cannot write this compression");
    res_free(&r);
}

/* --- Iggy parity: message files, group polls, list mode, option forms ----------------------- */

static uint64_t le_at(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i > 0; i--)
        v = v << 8 | p[i - 1];
    return v;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_message_files(void **state)
{
    (void)state;
    char bin[512], txt[512], bad[512];
    snprintf(bin, sizeof(bin), "%s/saved.bin", home);
    snprintf(txt, sizeof(txt), "%s/saved.txt", home);
    ok(ROOT("stream", "create", "cli-files"));
    ok(ROOT("topic", "create", "cli-files", "src", "1"));
    ok(ROOT("topic", "create", "cli-files", "copy", "1"));
    ok(ROOT("message", "send", "cli-files", "src", "one", "two,2", "-H",
            "who:string:a,b,n:uint8:7"));

    /* Binary records, Iggy's layout: 64-byte header, payload, headers. */
    cli_res_t r =
        ROOT("-o", "json", "message", "poll", "cli-files", "src", "-m", "10", "--output-file", bin);
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"messages_count\": 2");
    res_free(&r);
    char *data = read_file(bin);
    assert_non_null(data);
    const unsigned char *rec = (const unsigned char *)data;
    uint32_t headers_len = (uint32_t)le_at(rec + 48, 4);
    assert_int_equal(le_at(rec + 52, 4), 3); /* payload length */
    assert_int_equal(le_at(rec + 24, 8), 0); /* offset */
    assert_true(le_at(rec + 32, 8) > 0);     /* server timestamp */
    assert_int_equal(le_at(rec + 56, 8), 0); /* reserved */
    assert_memory_equal(rec + 64, "one", 3);
    assert_true(headers_len > 0);
    const unsigned char *second = rec + 64 + 3 + headers_len;
    assert_int_equal(le_at(second + 24, 8), 1);
    assert_memory_equal(second + 64, "two,2", 5);
    long size = file_size(bin);
    assert_int_equal(size, (long)(2 * (64 + headers_len) + 3 + 5));
    char id[64];
    snprintf(id, sizeof(id), "\"id\": \"%016llx%016llx\"", (unsigned long long)le_at(rec + 16, 8),
             (unsigned long long)le_at(rec + 8, 8));
    free(data);
    /* Appended to, as Iggy's CLI does. */
    r = ROOT("message", "poll", "cli-files", "src", "--offset", "1", "--output-file", bin);
    expect_code(&r, 0);
    expect_has(r.out, "stored 1 message (");
    res_free(&r);
    assert_int_equal(file_size(bin), size + (size - 64 - 3 - (long)headers_len));

    /* Replayed: ids, headers and payloads come back, offsets are new. */
    r = ROOT("-o", "json", "message", "send", "cli-files", "copy", "--input-file", bin);
    expect_code(&r, 0);
    expect_has(r.out, "\"messages_count\": 3");
    res_free(&r);
    r = ROOT("-o", "json", "message", "poll", "cli-files", "copy", "-m", "10");
    expect_json(r.out, false);
    expect_has(r.out, id);
    expect_has(r.out, "\"payload\": \"two,2\"");
    expect_has(r.out, "{\"key\": \"who\", \"kind\": \"string\", \"value\": \"a,b\"}");
    expect_has(r.out, "{\"key\": \"n\", \"kind\": \"uint8\", \"value\": 7}");
    expect_has(r.out, "\"offset\": 2,");
    res_free(&r);

    /* Lines: payloads one per line both ways; -H applies when sending. */
    r = ROOT("message", "poll", "cli-files", "src", "-m", "10", "--output-file", txt,
             "--file-format", "lines");
    expect_code(&r, 0);
    res_free(&r);
    data = read_file(txt);
    assert_string_equal(data, "one\ntwo,2\n");
    free(data);
    r = ROOT("-o", "json", "message", "send", "cli-files", "copy", "--input-file", txt,
             "--file-format", "lines", "-H", "via:string:file");
    expect_code(&r, 0);
    expect_has(r.out, "\"messages_count\": 2");
    res_free(&r);
    r = ROOT("-o", "json", "message", "poll", "cli-files", "copy", "--last", "-m", "1");
    expect_has(r.out, "\"payload\": \"two,2\"");
    expect_has(r.out, "{\"key\": \"via\", \"kind\": \"string\", \"value\": \"file\"}");
    res_free(&r);

    /* Errors: a missing or damaged file is local (7), a wrong combination usage (2). */
    r = ROOT("message", "send", "cli-files", "copy", "--input-file", "/nonexistent/file");
    expect_code(&r, 7);
    expect_has(r.err, "cannot open '/nonexistent/file'");
    res_free(&r);
    snprintf(bad, sizeof(bad), "%s/short.bin", home);
    FILE *f = fopen(bad, "wb");
    assert_non_null(f);
    unsigned char head[64] = {0};
    head[52] = 10; /* a 10-byte payload that is not there */
    fwrite(head, 1, sizeof(head), f);
    fwrite("abc", 1, 3, f);
    fclose(f);
    r = ROOT("message", "send", "cli-files", "copy", "--input-file", bad);
    expect_code(&r, 7);
    expect_has(r.err, "ends inside the message record at byte 0");
    res_free(&r);
    f = fopen(bad, "wb");
    fclose(f);
    r = ROOT("message", "send", "cli-files", "copy", "--input-file", bad);
    expect_code(&r, 2);
    expect_has(r.err, "is empty");
    res_free(&r);
    r = ROOT("message", "send", "cli-files", "copy", "--input-file", bin, "-H", "a:string:b");
    expect_code(&r, 2);
    res_free(&r);
    r = ROOT("message", "send", "cli-files", "copy", "x", "--input-file", bin);
    expect_code(&r, 2);
    expect_has(r.err, "not both");
    res_free(&r);
    r = ROOT("message", "send", "cli-files", "copy", "x", "--file-format", "lines");
    expect_code(&r, 2);
    res_free(&r);
    r = ROOT("message", "poll", "cli-files", "copy", "--file-format", "csv", "--output-file", txt);
    expect_code(&r, 2);
    res_free(&r);
    r = ROOT("message", "poll", "cli-files", "copy", "--output-file", "/nonexistent/dir/out.bin");
    expect_code(&r, 7);
    res_free(&r);
    unlink(bin);
    unlink(txt);
    unlink(bad);
}

static void test_group_poll(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-gp"));
    ok(ROOT("topic", "create", "cli-gp", "t", "2"));
    ok(ROOT("topic", "create", "cli-gp", "one", "1"));
    ok(ROOT("consumer-group", "create", "cli-gp", "t", "workers"));
    ok(ROOT("consumer-group", "create", "cli-gp", "one", "solo"));
    ok(ROOT("message", "send", "cli-gp", "t", "-p", "0", "a0", "a1", "a2"));
    ok(ROOT("message", "send", "cli-gp", "t", "-p", "1", "b0", "b1"));

    /* Alone in the group: every partition is ours; without PARTITION the
     * first assigned one; --next and --auto-commit use the group's offset. */
    cli_res_t r = ROOT("-o", "json", "message", "poll", "cli-gp", "t", "--kind", "consumer-group",
                       "-c", "workers", "--next", "-a", "-m", "2");
    expect_code(&r, 0);
    expect_json(r.out, false);
    expect_has(r.out, "\"partition_id\": 0");
    expect_has(r.out, "\"payload\": \"a1\"");
    res_free(&r);
    r = ROOT("-o", "json", "m", "p", "cli-gp", "t", "0", "-k", "consumer-group", "-c", "workers",
             "--next", "-a");
    expect_has(r.out, "\"payload\": \"a2\"");
    res_free(&r);
    r = ROOT("-o", "json", "consumer-offset", "get", "workers", "cli-gp", "t", "0", "-k",
             "consumer-group");
    expect_has(r.out, "\"stored_offset\": 2");
    res_free(&r);
    /* The CLI left the group again. */
    r = ROOT("-o", "json", "consumer-group", "get", "cli-gp", "t", "workers");
    expect_has(r.out, "\"members_count\": 0");
    res_free(&r);

    /* With another member, the group deals partitions: that member keeps
     * partition 0 and hands partition 1 to the CLI. */
    sl_client_t *c;
    assert_int_equal(sl_client_connect("127.0.0.1", srv.port, NULL, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    assert_int_equal(sl_client_join_consumer_group(c, sl_id_name("cli-gp"), sl_id_name("t"),
                                                   sl_id_name("workers")),
                     0);
    assert_int_equal(sl_client_join_consumer_group(c, sl_id_name("cli-gp"), sl_id_name("one"),
                                                   sl_id_name("solo")),
                     0);
    r = ROOT("-o", "json", "m", "p", "cli-gp", "t", "-k", "consumer-group", "-c", "workers");
    expect_code(&r, 0);
    expect_has(r.out, "\"partition_id\": 1");
    expect_has(r.out, "\"payload\": \"b0\"");
    res_free(&r);
    r = ROOT("m", "p", "cli-gp", "t", "0", "-k", "consumer-group", "-c", "workers");
    expect_code(&r, 1);
    expect_has(r.err, "partition 0 is assigned to another member of consumer group 'workers'");
    res_free(&r);
    r = ROOT("m", "p", "cli-gp", "one", "-k", "consumer-group", "-c", "solo");
    expect_code(&r, 1);
    expect_has(r.err, "assigns no partition to this member");
    res_free(&r);
    sl_client_close(c);

    /* Usage and lookup errors. */
    r = ROOT("m", "p", "cli-gp", "t", "-k", "consumer-group");
    expect_code(&r, 2);
    expect_has(r.err, "needs --consumer GROUP");
    res_free(&r);
    r = ROOT("m", "p", "cli-gp", "t", "-k", "group", "-c", "workers");
    expect_code(&r, 2);
    res_free(&r);
    r = ROOT("m", "p", "cli-gp", "t", "-k", "consumer-group", "-c", "nobody");
    expect_code(&r, 4);
    expect_has(r.err, "join consumer group 'nobody'");
    res_free(&r);
}

static void test_list_mode_and_forms(void **state)
{
    (void)state;
    ok(ROOT("stream", "create", "cli-lm"));
    /* Iggy's --replication-factor is accepted (1..255) and not sent. */
    ok(ROOT("topic", "create", "cli-lm", "t", "1", "none", "7 days", "-r", "1"));
    ok(ROOT("topic", "create", "cli-lm", "t2", "1", "gzip", "1M", "--replication-factor", "3"));
    ok(ROOT("topic", "update", "cli-lm", "t2", "t2", "gzip", "never_expire", "-r", "2"));
    cli_res_t r = ROOT("topic", "create", "cli-lm", "t3", "1", "-r", "0");
    expect_code(&r, 2);
    expect_has(r.err, "--replication-factor");
    res_free(&r);
    r = ROOT("topic", "create", "cli-lm", "t3", "1", "none", "1", "2h");
    expect_code(&r, 2);
    res_free(&r);
    r = ROOT("-o", "json", "topic", "get", "cli-lm", "t");
    expect_has(r.out, "\"message_expiry_us\": 604800000000");
    res_free(&r);
    r = ROOT("-o", "json", "topic", "list", "cli-lm");
    expect_has(r.out, "\"message_expiry_us\": 18446744073709551615");
    res_free(&r);

    /* List mode: one line per item, '|' between fields, no heading. */
    r = ROOT("topic", "list", "cli-lm", "--list-mode", "list");
    expect_code(&r, 0);
    assert_null(strstr(r.out, "NAME"));
    expect_has(r.out, "|t|1|");
    expect_has(r.out, "|t2|1|");
    size_t lines = 0;
    for (const char *c = r.out; *c; c++)
        lines += *c == '\n';
    assert_int_equal(lines, 2);
    res_free(&r);
    r = ROOT("stream", "list", "-l", "list");
    expect_has(r.out, "|cli-lm|");
    res_free(&r);
    r = ROOT("-o", "list", "stats");
    expect_code(&r, 0);
    expect_has(r.out, "Server version|");
    res_free(&r);
    const char *const *const list_cmds[] = {
        ARGS("user", "list", "-l", "list"),
        ARGS("client", "list", "-l", "list"),
        ARGS("pat", "list", "-l", "list"),
        ARGS("cluster", "metadata", "-l", "list"),
        ARGS("consumer-group", "list", "cli-lm", "t", "-l", "list"),
    };
    for (size_t i = 0; i < sizeof(list_cmds) / sizeof(list_cmds[0]); i++) {
        r = run_with(&(spawn_opts_t){.stdin_fd = -1},
                     ARGS("--server", server_arg, "-t", root_token), list_cmds[i]);
        expect_code(&r, 0);
        res_free(&r);
    }
    r = ROOT("stream", "list", "-l", "tree");
    expect_code(&r, 2);
    res_free(&r);
}

int main(void)
{
    /* A command may exit before reading all the input a test feeds it (an
     * error found first): the write then fails with EPIPE, which pump()
     * handles, instead of killing the test. */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_everywhere),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_streams),
        cmocka_unit_test(test_topics_partitions),
        cmocka_unit_test(test_segment_delete),
        cmocka_unit_test(test_send_poll_headers),
        cmocka_unit_test(test_poll_strategies),
        cmocka_unit_test(test_send_stdin),
        cmocka_unit_test(test_follow),
        cmocka_unit_test(test_groups_offsets),
        cmocka_unit_test(test_users),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_error_codes),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_error_messages_users),
        cmocka_unit_test(test_error_message_payload),
        cmocka_unit_test(test_contexts),
        cmocka_unit_test(test_login_logout),
        cmocka_unit_test(test_password_prompt),
        cmocka_unit_test(test_completion),
        cmocka_unit_test(test_reference_doc),
        cmocka_unit_test(test_system_commands),
        cmocka_unit_test(test_websocket_transport),
        cmocka_unit_test(test_message_files),
        cmocka_unit_test(test_group_poll),
        cmocka_unit_test(test_list_mode_and_forms),
    };
    return cmocka_run_group_tests(tests, start, stop);
}
