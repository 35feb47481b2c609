/* server.c's pure decisions: when tcp.login_timeout closes a connection without a login. The
 * tick reads the clock once and stamps the sessions that lost their login since their last
 * reply afterwards, so a stamp can be later than the tick's now; such a session has been
 * without a login for no time at all (a deleted user's session closed at once after its
 * eviction, and its next request met a closed connection instead of status 40). */
#include "testutil.h"

#include <stdint.h>

#include "server/server.h"

#define LIMIT_US (10u * 1000u * 1000u)

static void test_login_overdue_after_the_limit(void **state)
{
    (void)state;
    uint64_t since = 5000000000u;
    assert_false(sl_session_overdue(since, since, LIMIT_US));
    assert_false(sl_session_overdue(since, since + 1, LIMIT_US));
    assert_false(sl_session_overdue(since, since + LIMIT_US, LIMIT_US));
    assert_true(sl_session_overdue(since, since + LIMIT_US + 1, LIMIT_US));
    assert_true(sl_session_overdue(0, UINT64_MAX, LIMIT_US));
}

/* The stamp taken after the tick's clock read, by a microsecond or by a slow turn's worth. */
static void test_login_stamped_after_now_is_not_overdue(void **state)
{
    (void)state;
    uint64_t now = 5000000000u;
    assert_false(sl_session_overdue(now + 1, now, LIMIT_US));
    assert_false(sl_session_overdue(now + 250000, now, LIMIT_US));
    assert_false(sl_session_overdue(now + LIMIT_US + 1, now, LIMIT_US));
    assert_false(sl_session_overdue(UINT64_MAX, 0, LIMIT_US));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_login_overdue_after_the_limit),
        cmocka_unit_test(test_login_stamped_after_now_is_not_overdue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
