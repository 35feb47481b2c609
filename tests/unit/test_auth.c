/* src/auth/secret.c: Argon2id hashes, tokens, randomness, comparison. */
#include "testutil.h"

#include <string.h>

#include <sluice/error.h>

#include "auth/secret.h"

static void test_password_hash_verify(void **state)
{
    (void)state;
    char a[SL_PASSWORD_HASH_MAX], b[SL_PASSWORD_HASH_MAX];
    assert_int_equal(sl_password_hash(sl_span_str("iggy"), a), 0);
    assert_int_equal(sl_password_hash(sl_span_str("iggy"), b), 0);
    assert_true(strncmp(a, "$argon2id$v=19$", 15) == 0);
    /* A fresh salt each time: same password, different strings. */
    assert_string_not_equal(a, b);
    assert_true(sl_password_verify(a, sl_span_str("iggy")));
    assert_true(sl_password_verify(b, sl_span_str("iggy")));
    assert_false(sl_password_verify(a, sl_span_str("iggx")));
    assert_false(sl_password_verify(a, sl_span_str("")));
    assert_false(sl_password_verify(NULL, sl_span_str("iggy")));
    assert_false(sl_password_verify("not a hash", sl_span_str("iggy")));
    assert_true(strlen(a) < 255);
}

static void test_token(void **state)
{
    (void)state;
    char t1[SL_TOKEN_TEXT_MAX], t2[SL_TOKEN_TEXT_MAX];
    assert_int_equal(sl_token_generate(t1), 0);
    assert_int_equal(sl_token_generate(t2), 0);
    assert_int_equal(strlen(t1), 68);
    assert_string_not_equal(t1, t2);
    /* 50 bytes = 16 groups of 3 plus 2 bytes: one '=' of padding. */
    assert_int_equal(t1[67], '=');
    assert_true(t1[66] != '=');
    for (int i = 0; i < 67; i++)
        assert_non_null(strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                               t1[i]));

    /* SHA-256 of "abc", a published test vector (FIPS 180-2). */
    char d[SL_TOKEN_DIGEST_LEN];
    sl_token_digest(sl_span_str("abc"), d);
    assert_string_equal(d, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void test_generated_password(void **state)
{
    (void)state;
    char p[41], q[41];
    assert_int_equal(sl_password_generate(p, 24), 0);
    assert_int_equal(sl_password_generate(q, 24), 0);
    assert_int_equal(strlen(p), 24);
    assert_string_not_equal(p, q);
    for (size_t i = 0; i < 24; i++)
        assert_null(strchr("0O1lI", p[i]));
    assert_int_equal(sl_password_generate(p, 19), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_password_generate(p, 41), -SL_ERR_INVALID_COMMAND);
    assert_int_equal(sl_password_generate(p, 40), 0);
    assert_int_equal(strlen(p), 40);
}

static void test_ct_equal(void **state)
{
    (void)state;
    assert_true(sl_ct_equal("abcd", "abcd", 4));
    assert_false(sl_ct_equal("abcd", "abce", 4));
    assert_false(sl_ct_equal("abcd", "xbcd", 4));
    assert_true(sl_ct_equal("", "", 0));
}

static void test_random(void **state)
{
    (void)state;
    uint8_t a[64] = {0}, b[64] = {0};
    assert_int_equal(sl_random_bytes(a, sizeof(a)), 0);
    assert_int_equal(sl_random_bytes(b, sizeof(b)), 0);
    assert_memory_not_equal(a, b, sizeof(a));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_password_hash_verify), cmocka_unit_test(test_token),
        cmocka_unit_test(test_generated_password),   cmocka_unit_test(test_ct_equal),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
