/* The strict TOML subset reader: every value form, every error with its
 * line:column, duplicates and conflicts, depth and size caps, CRLF, and a
 * deterministic mutation run for the sanitizers. */
#include "testutil.h"

#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/toml.h"

static void parse_ok(const char *text, sl_toml_doc_t *doc)
{
    sl_toml_error_t err;
    int rc = sl_toml_parse(text, strlen(text), doc, &err);
    if (rc)
        fail_msg("unexpected error %u:%u: %s in <<%s>>", err.line, err.column, err.message, text);
}

/* Asserts the parse fails at line:column with a message containing want. */
static void check_error(const char *text, size_t len, uint32_t line, uint32_t column,
                        const char *want)
{
    sl_toml_doc_t doc;
    sl_toml_error_t err;
    int rc = sl_toml_parse(text, len, &doc, &err);
    if (rc != -SL_ERR_INVALID_CONFIGURATION)
        fail_msg("<<%s>> parsed, expected \"%s\"", text, want);
    assert_int_equal(doc.count, 0);
    sl_toml_doc_free(&doc);
    if (err.line != line || err.column != column || !strstr(err.message, want))
        fail_msg("<<%s>>: got %u:%u: %s; want %u:%u: ...%s...", text, err.line, err.column,
                 err.message, line, column, want);
}

#define expect_error(text, line, column, want) check_error((text), strlen(text), line, column, want)

static const sl_toml_value_t *value_of(const sl_toml_doc_t *doc, const char *name)
{
    const sl_toml_entry_t *e = sl_toml_find(doc, name);
    if (!e)
        fail_msg("no entry %s", name);
    return &e->value;
}

static void assert_string(const sl_toml_doc_t *doc, const char *name, const char *want,
                          size_t want_len)
{
    const sl_toml_value_t *v = value_of(doc, name);
    assert_int_equal(v->type, SL_TOML_STRING);
    assert_bytes_equal(v->string, v->string_len, want, want_len);
    assert_int_equal(v->string[v->string_len], '\0');
}

static void assert_integer(const sl_toml_doc_t *doc, const char *name, int64_t want)
{
    const sl_toml_value_t *v = value_of(doc, name);
    assert_int_equal(v->type, SL_TOML_INTEGER);
    assert_true(v->integer == want);
}

static void test_strings(void **state)
{
    (void)state;
    sl_toml_doc_t doc;
    parse_ok("plain = \"hello world\"\n"
             "escapes = \"q\\\" b\\\\ n\\n t\\t\"\n"
             "unicode = \"caf\\u00e9 \\u20AC \\u0041\"\n"
             "raw_utf8 = \"\xC3\xA9\xE2\x82\xAC\"\n"
             "literal = 'C:\\path\\n \"as is\"'\n"
             "empty_basic = \"\"\n"
             "empty_literal = ''\n"
             "tab_inside = \"a\tb\"\n"
             "hash_inside = \"# not a comment\" # a comment\n",
             &doc);
    assert_int_equal(doc.count, 9);
    assert_string(&doc, "plain", "hello world", 11);
    assert_string(&doc, "escapes", "q\" b\\ n\n t\t", 11);
    assert_string(&doc, "unicode", "caf\xC3\xA9 \xE2\x82\xAC A", 11);
    assert_string(&doc, "raw_utf8", "\xC3\xA9\xE2\x82\xAC", 5);
    assert_string(&doc, "literal", "C:\\path\\n \"as is\"", 17);
    assert_string(&doc, "empty_basic", "", 0);
    assert_string(&doc, "empty_literal", "", 0);
    assert_string(&doc, "tab_inside", "a\tb", 3);
    assert_string(&doc, "hash_inside", "# not a comment", 15);
    sl_toml_doc_free(&doc);
}

static void test_integers_and_booleans(void **state)
{
    (void)state;
    sl_toml_doc_t doc;
    parse_ok("zero = 0\nplus = +7\nminus = -7\nminus_zero = -0\nsep = 1_000_000\n"
             "max = 9223372036854775807\nmin = -9223372036854775808\n"
             "yes = true\nno = false\n",
             &doc);
    assert_integer(&doc, "zero", 0);
    assert_integer(&doc, "plus", 7);
    assert_integer(&doc, "minus", -7);
    assert_integer(&doc, "minus_zero", 0);
    assert_integer(&doc, "sep", 1000000);
    assert_integer(&doc, "max", INT64_MAX);
    assert_integer(&doc, "min", INT64_MIN);
    assert_int_equal(value_of(&doc, "yes")->type, SL_TOML_BOOL);
    assert_true(value_of(&doc, "yes")->boolean);
    assert_int_equal(value_of(&doc, "no")->type, SL_TOML_BOOL);
    assert_false(value_of(&doc, "no")->boolean);
    sl_toml_doc_free(&doc);
}

static void test_integer_parser(void **state)
{
    (void)state;
    int64_t v = 1;
    const char *why = NULL;
    assert_int_equal(sl_toml_parse_integer("42", 2, &v, &why), 0);
    assert_int_equal(v, 42);
    assert_int_equal(sl_toml_parse_integer("-1_024", 6, &v, &why), 0);
    assert_int_equal(v, -1024);
    const struct {
        const char *text;
        const char *why;
    } bad[] = {
        {"", "expected digits"},
        {"-", "expected digits"},
        {"+", "expected digits"},
        {"007", "leading zeros"},
        {"0_1", "leading zeros"},
        {"-01", "leading zeros"},
        {"1__2", "between two digits"},
        {"1_", "between two digits"},
        {"_1", "between two digits"},
        {"1a", "invalid character"},
        {"1 2", "invalid character"},
        {"9223372036854775808", "out of range"},
        {"-9223372036854775809", "out of range"},
        {"99999999999999999999999", "out of range"},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        why = NULL;
        if (sl_toml_parse_integer(bad[i].text, strlen(bad[i].text), &v, &why) !=
                -SL_ERR_INVALID_CONFIGURATION ||
            !why || !strstr(why, bad[i].why))
            fail_msg("\"%s\": want error %s, got %s", bad[i].text, bad[i].why, why ? why : "ok");
    }
}

static void test_tables_and_positions(void **state)
{
    (void)state;
    sl_toml_doc_t doc;
    parse_ok("# leading comment\n"
             "root_key = 1\n"
             "\n"
             "[tcp]   # the listener\n"
             "  address = \"127.0.0.1:8090\"\n"
             "[ system . sharding ]\n"
             "shards\t=\t4\n"
             "[system]\n"
             "path = 'data'\n",
             &doc);
    assert_int_equal(doc.count, 4);
    const sl_toml_entry_t *e = &doc.entries[0];
    assert_string_equal(e->name, "root_key");
    assert_int_equal(e->table_len, 0);
    assert_int_equal(e->line, 2);
    assert_int_equal(e->column, 1);
    assert_int_equal(e->value.line, 2);
    assert_int_equal(e->value.column, 12);
    e = &doc.entries[1];
    assert_string_equal(e->name, "tcp.address");
    assert_int_equal(e->table_len, 3);
    assert_int_equal(e->line, 5);
    assert_int_equal(e->column, 3);
    assert_int_equal(e->value.column, 13);
    e = &doc.entries[2];
    assert_string_equal(e->name, "system.sharding.shards");
    assert_int_equal(e->table_len, strlen("system.sharding"));
    assert_int_equal(e->value.column, 10);
    assert_string_equal(doc.entries[3].name, "system.path");
    assert_null(sl_toml_find(&doc, "shards"));
    assert_null(sl_toml_find(&doc, "system"));
    sl_toml_doc_free(&doc);
}

static void test_crlf_bom_and_no_final_newline(void **state)
{
    (void)state;
    sl_toml_doc_t doc;
    parse_ok("\xEF\xBB\xBF# comment\r\n[a]\r\n\r\nx = \"v\" # c\r\ny = 1", &doc);
    assert_int_equal(doc.count, 2);
    assert_string(&doc, "a.x", "v", 1);
    assert_integer(&doc, "a.y", 1);
    assert_int_equal(doc.entries[0].line, 4);
    assert_int_equal(doc.entries[1].line, 5);
    sl_toml_doc_free(&doc);

    parse_ok("", &doc);
    assert_int_equal(doc.count, 0);
    sl_toml_doc_free(&doc);
    parse_ok("\n\n   \n# only comments\n\t\n", &doc);
    assert_int_equal(doc.count, 0);
    sl_toml_doc_free(&doc);
    /* The byte-order mark does not shift columns. */
    expect_error("\xEF\xBB\xBFkey value", 1, 5, "expected '=' after key");
    /* A CR that does not start a CRLF is not a line end. */
    expect_error("x = 1\r2\n", 1, 6, "carriage return");
    expect_error("x = 1\ry = 2\n", 1, 6, "carriage return");
    expect_error("\r", 1, 1, "carriage return");
    expect_error("# comment\rmore\n", 1, 10, "carriage return");
    expect_error("[a]\r\n\r", 2, 1, "carriage return");
}

static void test_syntax_errors(void **state)
{
    (void)state;
    expect_error("key value\n", 1, 5, "expected '=' after key");
    expect_error("key\n", 1, 4, "expected '=' after key");
    expect_error("key = \n", 1, 7, "expected a value after '='");
    expect_error("key =", 1, 6, "expected a value after '='");
    expect_error("key = # c\n", 1, 7, "expected a value after '='");
    expect_error("= 1\n", 1, 1, "unexpected '=': expected a key");
    expect_error("a.b = 1\n", 1, 2, "dotted keys are not supported");
    expect_error("\"a\" = 1\n", 1, 1, "quoted keys are not supported");
    expect_error("k\xC3\xA9y = 1\n", 1, 2, "expected '=' after key");
    expect_error("\xC3\xA9 = 1\n", 1, 1, "unexpected byte 0xc3: expected a key");
    expect_error("x = 1 2\n", 1, 7, "expected the end of the line after a value");
    expect_error("x = \"a\"b\n", 1, 8, "expected the end of the line after a value");
    expect_error("x = yes\n", 1, 5, "expected a value");
    expect_error("x = True\n", 1, 5, "expected a value");
    expect_error("x = [1, 2]\n", 1, 5, "arrays are not supported");
    expect_error("x = { a = { b = 1 } }\n", 1, 11, "nested inline tables are not supported");
    expect_error("x = 1.5\n", 1, 5, "floating-point values are not supported");
    expect_error("x = 1e3\n", 1, 5, "floating-point values are not supported");
    expect_error("x = -inf\n", 1, 5, "floating-point values are not supported");
    expect_error("x = nan\n", 1, 5, "floating-point values are not supported");
    expect_error("x = info\n", 1, 5, "expected a value");
    expect_error("x = 0x1F\n", 1, 5, "only decimal integers");
    expect_error("x = 0o17\n", 1, 5, "only decimal integers");
    expect_error("x = 1979-05-27\n", 1, 5, "dates and times are not supported");
    expect_error("x = 07:32:00\n", 1, 5, "dates and times are not supported");
    expect_error("x = 1e-3\n", 1, 5, "floating-point values are not supported");
}

/* A bare word where a value goes is usually text whose quotes were
 * forgotten: the message says so and shows the quoted form. */
static void test_unquoted_text(void **state)
{
    (void)state;
    expect_error("address = 127.0.0.1:18091\n", 1, 11,
                 "text values must be quoted: \"127.0.0.1:18091\" (dates and times");
    expect_error("address = [::1]:8090\n", 1, 11, "arrays are not supported");
    expect_error("host = 127.0.0.1\n", 1, 8, "text values must be quoted: \"127.0.0.1\"");
    expect_error("size = 10GiB\n", 1, 8, "text values must be quoted: \"10GiB\"");
    expect_error("interval = 5sec\n", 1, 12, "text values must be quoted: \"5sec\"");
    expect_error("path = local_data\n", 1, 8,
                 "text values must be quoted: \"local_data\" (expected a value");
    expect_error("x = 1979-05-27\n", 1, 5, "text values must be quoted: \"1979-05-27\"");
    /* Bytes that would garble the message are not echoed. */
    expect_error("x = a\x01b\n", 1, 5, "text values must be quoted (expected a value");
    expect_error("x = a\"b\n", 1, 5, "text values must be quoted (expected a value");
    char long_word[100];
    snprintf(long_word, sizeof(long_word), "x = %070d:1\n", 7);
    expect_error(long_word, 1, 5, "text values must be quoted (dates and times");
    expect_error("x = 01\n", 1, 5, "leading zeros are not allowed");
    expect_error("x = 1__0\n", 1, 5, "between two digits");
    expect_error("x = 1_\n", 1, 5, "between two digits");
    expect_error("x = 9223372036854775808\n", 1, 5, "integer out of range");
    expect_error("x = -9223372036854775809\n", 1, 5, "integer out of range");
    expect_error("\n\n[a]\nkey   x\n", 4, 7, "expected '=' after key");
}

static void test_string_errors(void **state)
{
    (void)state;
    expect_error("x = \"abc\n", 1, 5, "unterminated string");
    expect_error("x = \"abc", 1, 5, "unterminated string");
    expect_error("x = 'abc\n", 1, 5, "unterminated string");
    expect_error("x = \"abc\r\n", 1, 5, "unterminated string");
    expect_error("x = \"abc\\", 1, 9, "backslash ends the line");
    expect_error("x = \"a\\qb\"\n", 1, 7, "invalid escape '\\q'");
    expect_error("x = \"\\b\"\n", 1, 6, "invalid escape '\\b'");
    expect_error("x = \"\\f\"\n", 1, 6, "invalid escape '\\f'");
    expect_error("x = \"\\r\"\n", 1, 6, "invalid escape '\\r'");
    expect_error("x = \"\\e\"\n", 1, 6, "invalid escape '\\e'");
    expect_error("x = \"\\U0001F600\"\n", 1, 6, "invalid escape '\\U'");
    expect_error("x = \"\\ \"\n", 1, 6, "invalid escape");
    expect_error("x = \"\\u12\"\n", 1, 6, "four hex digits");
    expect_error("x = \"\\u12G4\"\n", 1, 6, "four hex digits");
    expect_error("x = \"\\uD800\"\n", 1, 6, "surrogate");
    expect_error("x = \"\\udfff\"\n", 1, 6, "surrogate");
    expect_error("x = \"\\u0000\"\n", 1, 6, "\\u0000 is not allowed");
    expect_error("x = \"a\x01\"\n", 1, 7, "control character 0x01 in a string");
    expect_error("x = 'a\x7f'\n", 1, 7, "control character 0x7f in a string");
    expect_error("x = \"\xC3\"\n", 1, 5, "invalid UTF-8 in a string");
    expect_error("x = '\xFF'\n", 1, 5, "invalid UTF-8 in a string");
    expect_error("x = \"\"\"multi\"\"\"\n", 1, 5, "multi-line strings are not supported");
    expect_error("x = '''multi'''\n", 1, 5, "multi-line strings are not supported");
    expect_error("# bad \x02 byte\n", 1, 7, "control character 0x02 in a comment");
    expect_error("x = 1 # \xC0\xAF\n", 1, 8, "invalid UTF-8 in a comment");
    /* A NUL byte is never part of a value or a name. */
    check_error("x = 1\0\n", 7, 1, 6, "expected the end of the line");
    check_error("x = \"a\0\"\n", 9, 1, 7, "control character 0x00");
    check_error("\0", 1, 1, 1, "unexpected byte 0x00");
}

/* [[array]] elements are tables "array.n"; [array.sub] after one belongs to
 * the newest element; inline tables are entries below their key. */
static void test_arrays_and_inline_tables(void **state)
{
    (void)state;
    sl_toml_doc_t doc;
    parse_ok("[cluster]\nenabled = true\n"
             "[[cluster.nodes]]\nname = \"a\"\nports = { tcp = 8090, tcp_replica = 9090 }\n"
             "[[cluster.nodes]]\nname = \"b\"\n[cluster.nodes.ports]\ntcp = 8091\n"
             "[other]\nx = {}\ny = {k='v',j=1}\n",
             &doc);
    assert_string(&doc, "cluster.nodes.0.name", "a", 1);
    assert_integer(&doc, "cluster.nodes.0.ports.tcp", 8090);
    assert_integer(&doc, "cluster.nodes.0.ports.tcp_replica", 9090);
    assert_string(&doc, "cluster.nodes.1.name", "b", 1);
    assert_integer(&doc, "cluster.nodes.1.ports.tcp", 8091);
    assert_string(&doc, "other.y.k", "v", 1);
    assert_integer(&doc, "other.y.j", 1);
    assert_null(sl_toml_find(&doc, "other.x"));
    const sl_toml_entry_t *e = sl_toml_find(&doc, "cluster.nodes.0.ports.tcp_replica");
    assert_int_equal(e->line, 5);
    assert_int_equal(e->column, 23);
    sl_toml_doc_free(&doc);
    expect_error("x = { a = 1 b = 2 }\n", 1, 13, "expected ',' or '}' in an inline table");
    expect_error("x = { a = 1, a = 2 }\n", 1, 14, "duplicate key 'x.a'");
    expect_error("x = { a = 1\n", 1, 12, "expected ',' or '}' in an inline table");
    expect_error("x = { a = 1 },\n", 1, 14, "expected the end of the line after an inline table");
    expect_error("x = 1,\n", 1, 6, "expected the end of the line after a value");
    /* Elements of one array are written in one place. */
    expect_error("[[a]]\nx = 1\n[b]\n[[a]]\n", 4, 1, "must be written in one place");
}

static void test_header_errors(void **state)
{
    (void)state;
    expect_error("[a\n", 1, 3, "expected '.' or ']' in a table header");
    expect_error("[]\n", 1, 2, "expected a table name");
    expect_error("[a.]\n", 1, 4, "unexpected ']': expected a table name");
    expect_error("[.a]\n", 1, 2, "unexpected '.': expected a table name");
    expect_error("[a..b]\n", 1, 4, "expected a table name");
    expect_error("[a b]\n", 1, 4, "expected '.' or ']'");
    expect_error("[\"a\"]\n", 1, 2, "quoted table names are not supported");
    expect_error("[[a]\n", 1, 5, "expected ']]' to close an array-of-tables header");
    expect_error("[[a]] x = 1\n", 1, 7, "expected the end of the line after a table header");
    expect_error("[a] x = 1\n", 1, 5, "expected the end of the line after a table header");
    expect_error("[a]]\n", 1, 4, "expected the end of the line after a table header");
}

static void test_duplicates_and_conflicts(void **state)
{
    (void)state;
    expect_error("x = 1\ny = 2\nx = 3\n", 3, 1, "duplicate key 'x' (first set on line 1)");
    expect_error("[a]\nx = 1\n[b]\n[a]\n", 4, 1, "duplicate table [a]");
    expect_error("[a.b]\nx = 1\n[ a . b ]\n", 3, 1, "duplicate table [a.b]");
    expect_error("[a]\n[a.b]\n[a]\n", 3, 1, "duplicate table [a]");
    expect_error("[a]\nb = 1\n[a.b]\n", 3, 1, "table [a.b] conflicts with key 'a.b' on line 2");
    expect_error("[a]\nb = 1\n[a.b.c]\n", 3, 1, "conflicts with key 'a.b'");
    expect_error("a = 1\n[a]\n", 2, 1, "table [a] conflicts with key 'a'");
    expect_error("[a.b]\n[a]\nb = 1\n", 3, 1, "key 'a.b' conflicts with table [a.b]");
    expect_error("[a.b.c]\n[a]\nb = 1\n", 3, 1, "key 'a.b' conflicts with table [a.b.c]");

    /* The same key in different tables, and a sub-table before its parent. */
    sl_toml_doc_t doc;
    parse_ok("x = 0\n[a.b]\nx = 1\n[a]\nx = 2\nbb = 3\n[b]\nx = 4\n", &doc);
    assert_int_equal(doc.count, 5);
    assert_integer(&doc, "x", 0);
    assert_integer(&doc, "a.b.x", 1);
    assert_integer(&doc, "a.x", 2);
    assert_integer(&doc, "a.bb", 3);
    assert_integer(&doc, "b.x", 4);
    sl_toml_doc_free(&doc);
}

static void test_deep_tables(void **state)
{
    (void)state;
    char text[512];
    size_t at = 0;
    at += (size_t)snprintf(text + at, sizeof(text) - at, "[t0");
    for (unsigned i = 1; i < SL_TOML_DEPTH_MAX; i++)
        at += (size_t)snprintf(text + at, sizeof(text) - at, ".t%u", i);
    snprintf(text + at, sizeof(text) - at, "]\nk = 1\n");
    sl_toml_doc_t doc;
    parse_ok(text, &doc);
    assert_int_equal(doc.count, 1);
    assert_non_null(strstr(doc.entries[0].name, ".t15.k"));
    sl_toml_doc_free(&doc);

    /* One level more is refused at the first segment too deep. */
    snprintf(text + at, sizeof(text) - at, ".t16]\nk = 1\n");
    expect_error(text, 1, (uint32_t)at + 2, "tables nest deeper than 16 levels");

    /* A long name within the depth cap is refused by the name cap. */
    char longname[600];
    memset(longname, 'n', sizeof(longname));
    memcpy(longname, "[", 1);
    memcpy(longname + 300, "]\n", 3);
    expect_error(longname, 1, 2, "longer than 255 bytes");
    char key[600];
    snprintf(key, sizeof(key), "[%.200s]\n%.100s = 1\n", longname + 1, longname + 1);
    expect_error(key, 2, 1, "key name longer than 255 bytes");
}

static void test_entry_and_table_caps(void **state)
{
    (void)state;
    size_t cap = 16 * (SL_TOML_ENTRIES_MAX + 1);
    char *text = malloc(cap);
    assert_non_null(text);
    size_t at = 0;
    for (unsigned i = 0; i < SL_TOML_ENTRIES_MAX; i++)
        at += (size_t)snprintf(text + at, cap - at, "k%u = %u\n", i, i);
    sl_toml_doc_t doc;
    parse_ok(text, &doc);
    assert_int_equal(doc.count, SL_TOML_ENTRIES_MAX);
    assert_integer(&doc, "k1023", 1023);
    sl_toml_doc_free(&doc);
    snprintf(text + at, cap - at, "one_more = 1\n");
    expect_error(text, SL_TOML_ENTRIES_MAX + 1, 1, "more than 1024 keys");

    at = 0;
    for (unsigned i = 0; i <= SL_TOML_TABLES_MAX; i++)
        at += (size_t)snprintf(text + at, cap - at, "[t%u]\n", i);
    expect_error(text, SL_TOML_TABLES_MAX + 1, 1, "more than 256 tables");
    free(text);

    size_t big = SL_TOML_INPUT_MAX + 1;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, '\n', big);
    check_error(huge, big, 0, 0, "larger than");
    assert_int_equal(sl_toml_parse(huge, big - 1, &doc, &(sl_toml_error_t){0}), 0);
    sl_toml_doc_free(&doc);
    free(huge);
}

static void test_error_format(void **state)
{
    (void)state;
    char text[256] = "";
    for (int i = 0; i < 11; i++)
        strcat(text, "# line\n");
    strcat(text, "abcdefg x\n");
    sl_toml_doc_t doc;
    sl_toml_error_t err;
    assert_int_equal(sl_toml_parse(text, strlen(text), &doc, &err), -SL_ERR_INVALID_CONFIGURATION);
    sl_toml_doc_free(&doc);
    char buf[256];
    sl_toml_error_format(&err, "config.toml", buf, sizeof(buf));
    assert_string_equal(buf, "config.toml:12:9: expected '=' after key");
    err.line = 0;
    sl_toml_error_format(&err, "config.toml", buf, sizeof(buf));
    assert_string_equal(buf, "config.toml: expected '=' after key");
    assert_string_equal(sl_toml_type_name(SL_TOML_STRING), "string");
    assert_string_equal(sl_toml_type_name(SL_TOML_INTEGER), "integer");
    assert_string_equal(sl_toml_type_name(SL_TOML_BOOL), "boolean");
}

/* Every one-byte change of a document that uses every feature must either
 * parse or fail with a position: the sanitizer build proves no bad access. */
static void test_mutations(void **state)
{
    (void)state;
    static const char base[] = "# c\r\n[a.b]\nk = \"x\\u00e9\\n\" # t\nn = -1_2\n"
                               "[c]\nl = 'lit'\nb = true\n";
    static const char subst[] = {'\0', '\n', '\r', '"', '\'', '\\', '[',    ']',    '.', '=',
                                 '#',  ' ',  '_',  '-', 'u',  '0',  '\x80', '\xff', 'D', '{'};
    char text[sizeof(base)];
    size_t n = sizeof(base) - 1;
    unsigned ok = 0, failed = 0;
    for (size_t pos = 0; pos < n; pos++) {
        for (size_t s = 0; s < sizeof(subst); s++) {
            memcpy(text, base, n);
            text[pos] = subst[s];
            for (size_t cut = n - 2; cut <= n; cut++) {
                sl_toml_doc_t doc;
                sl_toml_error_t err;
                int rc = sl_toml_parse(text, cut, &doc, &err);
                if (rc == 0) {
                    ok++;
                } else {
                    assert_int_equal(rc, -SL_ERR_INVALID_CONFIGURATION);
                    assert_true(err.line >= 1 && err.column >= 1 && err.message[0]);
                    failed++;
                }
                sl_toml_doc_free(&doc);
            }
        }
    }
    assert_true(ok > 0 && failed > 0);
    /* Every prefix, too. */
    for (size_t cut = 0; cut <= n; cut++) {
        sl_toml_doc_t doc;
        sl_toml_error_t err;
        int rc = sl_toml_parse(base, cut, &doc, &err);
        assert_true(rc == 0 || rc == -SL_ERR_INVALID_CONFIGURATION);
        sl_toml_doc_free(&doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_integers_and_booleans),
        cmocka_unit_test(test_integer_parser),
        cmocka_unit_test(test_tables_and_positions),
        cmocka_unit_test(test_crlf_bom_and_no_final_newline),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_unquoted_text),
        cmocka_unit_test(test_string_errors),
        cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_arrays_and_inline_tables),
        cmocka_unit_test(test_duplicates_and_conflicts),
        cmocka_unit_test(test_deep_tables),
        cmocka_unit_test(test_entry_and_table_caps),
        cmocka_unit_test(test_error_format),
        cmocka_unit_test(test_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
