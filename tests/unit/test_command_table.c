/* The command table: shape checks, and docs/compatibility.md generated from
 * it (the test fails when the document and the table disagree; run with
 * SLUICE_UPDATE_DOCS=1 to rewrite the generated part). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "wire/command.h"
#include "wire/header.h"
#include "server/support.h"

const char *sl_client_support(uint32_t code);

static void test_table_shape(void **state)
{
    (void)state;
    assert_int_equal(sl_commands_count, 51);
    for (size_t i = 0; i < sl_commands_count; i++) {
        const sl_command_t *c = &sl_commands[i];
        if (i > 0)
            assert_true(sl_commands[i - 1].code < c->code);
        assert_ptr_equal(sl_command_by_code(c->code), c);
        assert_true(sl_op_declared(c->operation));
        assert_true(sl_op_declared(c->reply_operation));
        assert_non_null(c->request_decode);
        assert_non_null(c->reply_encode);
        switch (c->plane) {
        case SL_PLANE_READ:
        case SL_PLANE_LEGACY:
            assert_int_equal(c->operation, SL_OP_NON_REPLICATED);
            assert_false(c->reply_framed);
            break;
        case SL_PLANE_METADATA:
            assert_true(sl_op_metadata(c->operation));
            assert_true(sl_op_result_framed(c->reply_operation));
            assert_true(c->reply_framed);
            break;
        case SL_PLANE_PARTITION:
            assert_true(sl_op_partition(c->operation));
            assert_int_equal(c->reply_framed, sl_op_result_framed(c->reply_operation));
            break;
        case SL_PLANE_SEGMENTS:
            assert_int_equal(c->operation, SL_OP_DELETE_SEGMENTS);
            assert_int_equal(c->reply_operation, SL_OP_TRUNCATE_PARTITION);
            break;
        case SL_PLANE_SESSION:
            assert_true(c->operation == SL_OP_REGISTER || c->operation == SL_OP_LOGOUT);
            break;
        }
        if (c->operation != SL_OP_NON_REPLICATED && c->operation != SL_OP_REGISTER)
            assert_ptr_equal(sl_command_by_operation(c->operation), c);
    }
    assert_null(sl_command_by_code(0));
    assert_null(sl_command_by_code(2));
    assert_null(sl_command_by_code(607));
    assert_int_equal(sl_command_by_operation(SL_OP_REGISTER)->code, 40);
    assert_null(sl_command_by_operation(SL_OP_NON_REPLICATED));
    assert_null(sl_command_by_operation(150));
}

/* Every row's empty or minimal body goes through its adapters without
 * touching memory it does not own (ASan checks the sizes). */
static void test_adapters_run(void **state)
{
    (void)state;
    sl_arena_t arena;
    sl_arena_init(&arena, 4096, 1 << 20);
    for (size_t i = 0; i < sl_commands_count; i++) {
        const sl_command_t *c = &sl_commands[i];
        void *req = calloc(1, c->request_size);
        void *rep = calloc(1, c->reply_size);
        assert_non_null(req);
        assert_non_null(rep);
        (void)c->request_decode(sl_span(NULL, 0), req);
        (void)c->reply_decode(sl_span(NULL, 0), &arena, rep);
        sl_arena_reset(&arena);
        free(req);
        free(rep);
    }
    sl_arena_free(&arena);
}

static const char *BEGIN = "<!-- BEGIN GENERATED: command table -->\n";
static const char *END = "<!-- END GENERATED: command table -->\n";

/* Which integration programs drive a command against the real sluiced. */
static const char *tested_against_server(uint32_t code)
{
    return strcmp(sl_server_support(code), "yes") == 0 ||
                   strncmp(sl_server_support(code), "partial", 7) == 0 ||
                   strncmp(sl_server_support(code), "yes", 3) == 0
               ? "integration"
               : "-";
}

static void render(sl_buf_t *b)
{
    char line[512];
    const char *head = "| Code | Command | Operation (reply) | Plane | Request codec | Reply codec "
                       "| Server | Client | Tested |\n"
                       "|---:|---|---|---|---|---|---|---|---|\n";
    sl_put_bytes(b, head, strlen(head));
    for (size_t i = 0; i < sl_commands_count; i++) {
        const sl_command_t *c = &sl_commands[i];
        char op[32];
        if (c->reply_operation != c->operation)
            snprintf(op, sizeof(op), "%u (%u)", c->operation, c->reply_operation);
        else
            snprintf(op, sizeof(op), "%u", c->operation);
        const char *reply = c->plane == SL_PLANE_LEGACY ? "n/a (eviction 15)"
                            : c->reply_framed           ? "yes (result-framed)"
                                                        : "yes";
        int n = snprintf(line, sizeof(line),
                         "| %u | %s | %s | %s | yes | %s | %s | %s | unit: golden/round "
                         "trip/hostile; %s |\n",
                         c->code, c->name, op, sl_plane_name(c->plane), reply,
                         sl_server_support(c->code), sl_client_support(c->code),
                         tested_against_server(c->code));
        sl_put_bytes(b, line, (size_t)n);
    }
}

static void test_compatibility_doc(void **state)
{
    (void)state;
    const char *path = getenv("SLUICE_COMPAT_DOC");
    if (!path)
        path = "docs/compatibility.md";
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    static char doc[1 << 16];
    size_t n = fread(doc, 1, sizeof(doc) - 1, f);
    fclose(f);
    doc[n] = '\0';
    char *begin = strstr(doc, BEGIN), *end = strstr(doc, END);
    assert_non_null(begin);
    assert_non_null(end);
    begin += strlen(BEGIN);

    sl_buf_t b;
    sl_buf_init(&b, 0);
    render(&b);
    if (getenv("SLUICE_UPDATE_DOCS")) {
        f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(doc, 1, (size_t)(begin - doc), f);
        fwrite(b.data, 1, b.len, f);
        fputs(end, f);
        fclose(f);
    } else {
        assert_bytes_equal(begin, (size_t)(end - begin), b.data, b.len);
    }
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_shape),
        cmocka_unit_test(test_adapters_run),
        cmocka_unit_test(test_compatibility_doc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
