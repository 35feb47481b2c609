/* sluice-bench's iggy-bench command line (bench/sluice_bench_args.c):
 * command lines from Iggy's docs parse unchanged with the meaning
 * iggy-bench gives them, iggy-bench's defaults and kind rules, the value
 * forms (sizes, durations, ranges), the refusals, and which command lines
 * still go to the earlier `--only` interface. */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "../../bench/sluice_bench_args.c"

enum { WORDS_MAX = 40 };

/* Splits line at spaces into argv (argv[0] = "sluice-bench"), then parses. */
static int parse_line(const char *line, sb_iggy_args_t *out, char *err, size_t errlen)
{
    static char text[1024];
    static char *argv[WORDS_MAX];
    snprintf(text, sizeof(text), "sluice-bench %s", line);
    int argc = 0;
    for (char *save = NULL, *w = strtok_r(text, " ", &save); w && argc < WORDS_MAX;
         w = strtok_r(NULL, " ", &save))
        argv[argc++] = w;
    return sb_iggy_parse(argc, argv, out, err, errlen);
}

static sb_iggy_args_t parse_ok(const char *line)
{
    sb_iggy_args_t a;
    char err[256];
    int rc = parse_line(line, &a, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "'%s': %s\n", line, err);
    assert_int_equal(rc, 0);
    return a;
}

/* Fails to parse, with a reason that contains want. */
static void parse_fails(const char *line, const char *want)
{
    sb_iggy_args_t a;
    char err[256];
    assert_int_equal(parse_line(line, &a, err, sizeof(err)), -1);
    if (!strstr(err, want))
        fprintf(stderr, "'%s': got '%s', want '%s'\n", line, err, want);
    assert_non_null(strstr(err, want));
}

/* The two command lines of the issue, exactly. */
static void test_issue_lines(void **state)
{
    (void)state;
    sb_iggy_args_t a = parse_ok("-m 1000 -P 1000 -b 1000 pinned-producer --streams 8 "
                                "--producers 8 tcp --server-address 127.0.0.1:8090");
    assert_int_equal(a.kind, SB_KIND_PP);
    assert_int_equal(a.message_size.min, 1000);
    assert_int_equal(a.message_size.max, 1000);
    assert_int_equal(a.messages_per_batch.min, 1000);
    assert_int_equal(a.message_batches, 1000);
    assert_int_equal(a.total_data, 0);
    assert_int_equal(a.streams, 8);
    assert_int_equal(a.producers, 8);
    assert_int_equal(a.consumers, 0);
    assert_int_equal(a.partitions, 1);
    assert_int_equal(a.transport, SB_TRANSPORT_TCP);
    assert_string_equal(a.host, "127.0.0.1");
    assert_int_equal(a.port, 8090);

    a = parse_ok("-T 1GB pp --producers 4 tcp");
    assert_int_equal(a.kind, SB_KIND_PP);
    assert_int_equal(a.total_data, 1000000000ull);
    assert_int_equal(a.message_batches, 0);
    assert_int_equal(a.producers, 4);
    assert_int_equal(a.streams, 4); /* pinned: one stream per producer */
    assert_int_equal(a.port, 0);    /* no address: sluice-bench starts sluiced */

    a = parse_ok("-T 1GB pp --producers 4 ceiling");
    assert_int_equal(a.transport, SB_TRANSPORT_CEILING);
}

/* Every example of iggy-bench's own list (its `examples` text). */
static void test_iggy_examples(void **state)
{
    (void)state;
    static const char *const lines[] = {
        "pinned-producer --streams 10 --producers 10 tcp",
        "pinned-consumer --streams 10 --consumers 10 tcp",
        "pinned-producer-and-consumer --streams 10 --producers 10 --consumers 10 tcp",
        "balanced-producer --partitions 24 --producers 6 tcp",
        "balanced-consumer-group --consumers 6 tcp",
        "balanced-producer-and-consumer-group --partitions 24 --producers 6 --consumers 6 tcp",
        "--total-data 10GiB bpcg tcp",
        "end-to-end-producing-consumer --producing-consumers 12 --streams 12 tcp",
        "end-to-end-producing-consumer-group --partitions 24 --producers 6 --consumers 6 tcp",
        "pinned-producer tcp --server-address 127.0.0.1:8090",
        "--durability persisted balanced-producer-and-consumer-group tcp",
        "--message-size 1000 --messages-per-batch 100 --message-batches 1000 --rate-limit 100MB "
        "balanced-producer --streams 5 --producers 5 tcp",
        "--message-size 100..1000 --messages-per-batch 100 --total-data 1GiB balanced-producer "
        "--streams 5 --producers 5 tcp",
        "--message-size 1000 --messages-per-batch 10..100 --total-data 500MiB balanced-producer "
        "tcp",
        "--message-size 500..2000 --messages-per-batch 50..200 --total-data 2GiB --warmup-time 10s "
        "--rate-limit 50MB balanced-producer tcp",
        "pinned-producer --streams 5 --producers 5 tcp --server-address localhost:8090",
        "--username admin --password secret pinned-producer tcp --server-address "
        "192.168.1.100:8090",
        "pinned-producer tcp output",
        "--warmup-time 10s --total-data 10GiB balanced-producer tcp output --identifier baseline "
        "--remark replicated-defaults",
        "-T 10GB pp --producers 5 tcp",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        parse_ok(lines[i]);

    sb_iggy_args_t a = parse_ok(lines[14]);
    assert_int_equal(a.message_size.min, 500);
    assert_int_equal(a.message_size.max, 2000);
    assert_int_equal(a.messages_per_batch.min, 50);
    assert_int_equal(a.messages_per_batch.max, 200);
    assert_int_equal(a.total_data, 2ull << 30);
    assert_int_equal(a.warmup_us, 10000000);
    assert_int_equal(a.rate_limit, 50000000);
    a = parse_ok(lines[16]);
    assert_string_equal(a.username, "admin");
    assert_string_equal(a.password, "secret");
    assert_string_equal(a.host, "192.168.1.100");
    a = parse_ok(lines[18]);
    assert_true(a.output);
    assert_string_equal(a.output_dir, "performance_results");
    assert_string_equal(a.identifier, "baseline");
    assert_string_equal(a.remark, "replicated-defaults");
    a = parse_ok(lines[10]);
    assert_true(a.enforce_fsync);
}

/* iggy-bench's defaults per kind. */
static void test_defaults(void **state)
{
    (void)state;
    sb_iggy_args_t a = parse_ok("pp tcp");
    assert_int_equal(a.producers, 8);
    assert_int_equal(a.streams, 8);
    assert_int_equal(a.message_batches, 1000);
    assert_int_equal(a.message_size.min, 1000);
    assert_int_equal(a.messages_per_batch.min, 1000);
    assert_int_equal(a.sampling_us, 10000);
    assert_int_equal(a.moving_average_window, 20);
    assert_string_equal(a.username, "iggy");
    assert_string_equal(a.password, "iggy");
    assert_false(a.enforce_fsync);
    a = parse_ok("bp tcp");
    assert_int_equal(a.streams, 1);
    assert_int_equal(a.partitions, 24);
    assert_int_equal(a.producers, 8);
    assert_int_equal(a.consumers, 0);
    a = parse_ok("bpcg tcp");
    assert_int_equal(a.consumers, 8);
    assert_int_equal(a.consumer_groups, 1);
    a = parse_ok("pc tcp");
    assert_int_equal(a.producers, 0);
    assert_int_equal(a.consumers, 8);
    assert_int_equal(a.streams, 8);
    a = parse_ok("e2e tcp");
    assert_int_equal(a.producers, 8);
    assert_int_equal(a.consumers, 8); /* the same actors consume */
    assert_int_equal(a.streams, 8);
    a = parse_ok("e2ecg -p 3 -c 5 tcp");
    assert_int_equal(a.producers, 3);
    assert_int_equal(a.consumers, 5);
    assert_int_equal(a.consumer_groups, 1);
    a = parse_ok("bcg tcp");
    assert_int_equal(a.partitions, 24);
}

/* Short forms, "--opt=value", attached short values, flags, aliases. */
static void test_forms(void **state)
{
    (void)state;
    sb_iggy_args_t a = parse_ok("-m=200..500 -P50 --message-batches=7 -w 1m30s -t 5ms -W 4 "
                                "--enforce-fsync --no-ceiling --pretty bpcg -s 2 -a 8 -p 3 -c 4 "
                                "-g 2 -T 1GiB tcp --nodelay --server-address=127.0.0.2:9000 "
                                "output -o out --gitref abc --gitref-date 2026-01-01 "
                                "--extra-info x");
    assert_int_equal(a.message_size.min, 200);
    assert_int_equal(a.message_size.max, 500);
    assert_int_equal(a.messages_per_batch.min, 50);
    assert_int_equal(a.message_batches, 7);
    assert_int_equal(a.warmup_us, 90000000);
    assert_int_equal(a.sampling_us, 5000);
    assert_int_equal(a.moving_average_window, 4);
    assert_true(a.enforce_fsync);
    assert_true(a.no_ceiling);
    assert_true(a.pretty);
    assert_int_equal(a.kind, SB_KIND_BPCG);
    assert_int_equal(a.streams, 2);
    assert_int_equal(a.partitions, 8);
    assert_int_equal(a.producers, 3);
    assert_int_equal(a.consumers, 4);
    assert_int_equal(a.consumer_groups, 2);
    assert_int_equal(a.max_topic_size, 1ull << 30); /* -T after the kind: max topic size */
    assert_string_equal(a.host, "127.0.0.2");
    assert_int_equal(a.port, 9000);
    assert_string_equal(a.output_dir, "out");
    assert_string_equal(a.gitref, "abc");
    assert_string_equal(a.gitref_date, "2026-01-01");
    assert_string_equal(a.extra_info, "x");
    static const char *const aliases[] = {"pp", "pc", "ppc", "bp", "bcg", "bpcg", "e2e", "e2ecg"};
    for (int k = 0; k < 8; k++) {
        char line[64];
        snprintf(line, sizeof(line), "%s ceiling", aliases[k]);
        assert_int_equal(parse_ok(line).kind, SB_KIND_PP + k);
        snprintf(line, sizeof(line), "%s peers", kinds[SB_KIND_PP + k].name);
        assert_int_equal(parse_ok(line).kind, SB_KIND_PP + k);
    }
    a = parse_ok("--help");
    assert_true(a.help);
    a = parse_ok("pp --help");
    assert_true(a.help);
    a = parse_ok("examples");
    assert_true(a.examples);
}

static void test_values(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(sb_parse_size("1GB", &v), 0);
    assert_int_equal(v, 1000000000ull);
    assert_int_equal(sb_parse_size("10GiB", &v), 0);
    assert_int_equal(v, 10ull << 30);
    assert_int_equal(sb_parse_size("512 kb", &v), 0);
    assert_int_equal(v, 512000);
    assert_int_equal(sb_parse_size("1.5MB", &v), 0);
    assert_int_equal(v, 1500000);
    assert_int_equal(sb_parse_size("100", &v), 0);
    assert_int_equal(v, 100);
    assert_int_equal(sb_parse_size("7MiB", &v), 0);
    assert_int_equal(v, 7ull << 20);
    assert_int_equal(sb_parse_size("GB", &v), -1);
    assert_int_equal(sb_parse_size("-1GB", &v), -1);
    assert_int_equal(sb_parse_size("1XB", &v), -1);
    assert_int_equal(sb_parse_size("99999999999999TB", &v), -1);
    assert_int_equal(sb_parse_duration("10s", &v), 0);
    assert_int_equal(v, 10000000);
    assert_int_equal(sb_parse_duration("100ms", &v), 0);
    assert_int_equal(v, 100000);
    assert_int_equal(sb_parse_duration("1m 30s", &v), 0);
    assert_int_equal(v, 90000000);
    assert_int_equal(sb_parse_duration("2h", &v), 0);
    assert_int_equal(v, 7200000000ull);
    assert_int_equal(sb_parse_duration("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(sb_parse_duration("10", &v), -1); /* a unit is needed */
    assert_int_equal(sb_parse_duration("10 parsecs", &v), -1);
    assert_int_equal(sb_parse_duration("", &v), -1);
    sb_range_t r;
    assert_int_equal(sb_parse_range("200..500", 1000, &r), 0);
    assert_int_equal(r.min, 200);
    assert_int_equal(r.max, 500);
    assert_int_equal(sb_parse_range("7", 1000, &r), 0);
    assert_int_equal(r.min, 7);
    assert_int_equal(r.max, 7);
    assert_int_equal(sb_parse_range("500..200", 1000, &r), -1);
    assert_int_equal(sb_parse_range("0", 1000, &r), -1);
    assert_int_equal(sb_parse_range("1001", 1000, &r), -1);
    assert_int_equal(sb_parse_range("..5", 1000, &r), -1);
    assert_int_equal(sb_parse_range("5..", 1000, &r), -1);
    assert_int_equal(sb_parse_range("5x", 1000, &r), -1);
}

/* iggy-bench's kind rules and everything refused, each with its reason. */
static void test_refusals(void **state)
{
    (void)state;
    parse_fails("-b 10 -T 1GB pp tcp", "exclude each other");
    parse_fails("-T 1GB -b 10 pp tcp", "exclude each other");
    parse_fails("pp --streams 3 --producers 4 tcp", "must be equal to the number of producers");
    parse_fails("pc --streams 9 --consumers 4 tcp", "pinned consumer");
    parse_fails("ppc --partitions 2 tcp", "number of partitions must be 1");
    parse_fails("bp --partitions 1 tcp", "at least 2");
    parse_fails("bpcg --partitions 4 --consumers 8 tcp", "Consumer number");
    parse_fails("bpcg --streams 2 tcp", "one group per stream");
    parse_fails("e2e --streams 9 --producing-consumers 4 tcp", "producing consumer");
    parse_fails("pp --consumers 2 tcp", "not an option of pinned-producer");
    parse_fails("pinned-widget tcp", "unknown benchmark kind");
    parse_fails("pp quic", "not supported");
    parse_fails("pp http", "not supported");
    parse_fails("pp carrier-pigeon", "unknown transport");
    parse_fails("pp", "needs a transport");
    parse_fails("--frobnicate pp tcp", "unknown option");
    parse_fails("-m", "needs a value");
    parse_fails("-m 0 pp tcp", "message-size");
    parse_fails("-H pp tcp", "high-level-api");
    parse_fails("--durability eventual pp tcp", "durability");
    parse_fails("-T 1000 -m 1000 pp tcp", "2x greater");
    parse_fails("-m 1000000 -P 1000 pp tcp", "at most");
    parse_fails("pp tcp --server-address nowhere", "HOST:PORT");
    parse_fails("pp tcp --server-address h:99999", "HOST:PORT");
    parse_fails("pp tcp --tls", "plain TCP");
    parse_fails("pp ceiling --server-address 127.0.0.1:1", "not an option of ceiling");
    parse_fails("pp tcp output --open-charts", "not supported");
    parse_fails("pp tcp output --bogus", "not an option of output");
    parse_fails("pp --producers 300 tcp", "1..256");
    parse_fails("", "no benchmark kind");
}

/* Which command lines keep the earlier interface. */
static void test_old_interface(void **state)
{
    (void)state;
    char a0[] = "sluice-bench", a1[] = "--only", a2[] = "ping,rss", a3[] = "--rounds", a4[] = "3";
    char a5[] = "--password", a6[] = "pp", a7[] = "tcp", a8[] = "--help", a9[] = "-m";
    char *none[] = {a0};
    char *old[] = {a0, a1, a2, a3, a4};
    char *old_pp_password[] = {a0, a5, a6}; /* "pp" is --password's value here */
    char *kind[] = {a0, a6, a7};
    char *password_then_kind[] = {a0, a5, a4, a6, a7};
    char *help[] = {a0, a8};
    char *iggy_option[] = {a0, a9, a4, a6, a7};
    char b1[] = "messages", b2[] = "--message-bytes", b3[] = "100", b4[] = "--batch-messages";
    char *old_shape[] = {a0, a1, b1, b2, b3, b4, b3}; /* the message figures' batch shape */
    assert_false(sb_iggy_wanted(7, old_shape));
    assert_false(sb_iggy_wanted(1, none));
    assert_false(sb_iggy_wanted(5, old));
    assert_false(sb_iggy_wanted(3, old_pp_password));
    assert_false(sb_iggy_wanted(2, help));
    assert_true(sb_iggy_wanted(3, kind));
    assert_true(sb_iggy_wanted(5, password_then_kind));
    assert_true(sb_iggy_wanted(5, iggy_option));
    /* Every option of the earlier command line, with a value, keeps it. */
    for (size_t i = 0; sb_old_options[i].name; i++) {
        if (!sb_old_options[i].has_arg)
            continue;
        char name[64], value[] = "5";
        snprintf(name, sizeof(name), "--%s", sb_old_options[i].name);
        char *argv[] = {a0, name, value};
        assert_false(sb_iggy_wanted(3, argv));
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(sb_kind_title(SB_KIND_BPCG), "Balanced Producer And Consumer Group");
    assert_string_equal(sb_kind_key(SB_KIND_E2ECG), "end_to_end_producing_consumer_group");
    assert_string_equal(sb_kind_name(SB_KIND_PPC), "pinned-producer-and-consumer");
    assert_string_equal(sb_transport_name(SB_TRANSPORT_CEILING), "ceiling");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    sb_iggy_usage(f);
    sb_iggy_examples(f);
    fclose(f);
    for (int k = SB_KIND_PP; k < SB_KIND_COUNT; k++) {
        char alias[16];
        snprintf(alias, sizeof(alias), "(%s)", kinds[k].alias);
        assert_non_null(strstr(text, kinds[k].name));
        assert_non_null(strstr(text, alias));
    }
    assert_non_null(strstr(text, "--message-size"));
    assert_non_null(strstr(text, "ceiling"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_lines),   cmocka_unit_test(test_iggy_examples),
        cmocka_unit_test(test_defaults),      cmocka_unit_test(test_forms),
        cmocka_unit_test(test_values),        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_old_interface), cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
