/* Assertions for invariants (programmer errors, never bad input).
 * sl_assert stays on in release builds; keep it to cheap checks.
 * sl_assert_debug is compiled out with NDEBUG. */
#ifndef SL_BASE_ASSERT_H
#define SL_BASE_ASSERT_H

_Noreturn void sl_assert_fail(const char *expr, const char *file, int line, const char *func);

#define sl_assert(expr)                                                                            \
    ((expr) ? (void)0 : sl_assert_fail(#expr, __FILE__, __LINE__, __func__))

#ifdef NDEBUG
#define sl_assert_debug(expr) ((void)0)
#else
#define sl_assert_debug(expr) sl_assert(expr)
#endif

#define SL_WUR __attribute__((warn_unused_result))
#define SL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
