/* Helpers for the cmocka unit tests: golden vectors, hex, byte comparison. */
#ifndef SL_TESTUTIL_H
#define SL_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include "base/bytes.h"

/* Loads tests/vectors/<name> (hexdump -C format) into a malloc'd buffer;
 * fails the test when the file is missing or malformed. Free with free(). */
uint8_t *tu_vector(const char *name, size_t *len);
/* Parses "00 2c 00 00" (spaces and newlines ignored) into a malloc'd buffer. */
uint8_t *tu_hex(const char *hex, size_t *len);
/* Fails with a hex dump of the first difference when the bytes differ. */
void tu_assert_bytes(const void *got, size_t got_len, const void *want, size_t want_len,
                     const char *file, int line);
#define assert_bytes_equal(got, got_len, want, want_len)                                           \
    tu_assert_bytes((got), (got_len), (want), (want_len), __FILE__, __LINE__)
#define assert_span_equal(got, want)                                                               \
    tu_assert_bytes((got).ptr, (got).len, (want).ptr, (want).len, __FILE__, __LINE__)
#define assert_span_str(got, str)                                                                  \
    tu_assert_bytes((got).ptr, (got).len, (str), strlen(str), __FILE__, __LINE__)

#endif
