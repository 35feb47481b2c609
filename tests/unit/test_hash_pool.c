/* The password-hash pool: verdicts and hashes computed on the workers come
 * back whole through the eventfd, secrets are wiped, the queue bound holds,
 * and a pool destroyed with jobs still in it frees them (ASan checks). */
#include "testutil.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/hash_pool.h"

#define WAIT_MS 60000

static sl_hash_job_t *verify_job(const char *phc, const char *password)
{
    sl_hash_job_t *job = sl_hash_job_new();
    assert_non_null(job);
    job->verify = true;
    job->has_phc = phc != NULL;
    if (phc) {
        assert_true(strlen(phc) < sizeof(job->phc));
        memcpy(job->phc, phc, strlen(phc) + 1);
    }
    job->password_len = (uint8_t)strlen(password);
    memcpy(job->password, password, job->password_len);
    return job;
}

/* Waits for the eventfd and collects done jobs until want have come back;
 * they are put in done[] in the order the pool returned them. */
static void collect(sl_hash_pool_t *pool, sl_hash_job_t **done, int want)
{
    int have = 0;
    for (int round = 0; round < 1000 && have < want; round++) {
        struct pollfd p = {.fd = sl_hash_pool_event_fd(pool), .events = POLLIN};
        assert_int_equal(poll(&p, 1, WAIT_MS), 1);
        uint64_t count;
        assert_int_equal(read(p.fd, &count, sizeof(count)), (ssize_t)sizeof(count));
        assert_true(count >= 1);
        for (sl_hash_job_t *j = sl_hash_pool_take_done(pool); j; j = j->next) {
            assert_true(have < want);
            done[have++] = j;
        }
    }
    assert_int_equal(have, want);
}

static void release_all(sl_hash_pool_t *pool, sl_hash_job_t **jobs, int n)
{
    for (int i = 0; i < n; i++) {
        sl_hash_pool_release(pool);
        sl_hash_job_free(jobs[i]);
    }
    assert_int_equal(sl_hash_pool_in_flight(pool), 0);
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void test_verdicts_and_hashes(void **state)
{
    (void)state;
    char phc[SL_PASSWORD_HASH_MAX];
    assert_int_equal(sl_password_hash(sl_span_str("right-password"), phc), 0);
    sl_hash_pool_t *pool;
    assert_int_equal(sl_hash_pool_create(2, 8, &pool), 0);
    sl_hash_job_t *right = verify_job(phc, "right-password");
    sl_hash_job_t *wrong = verify_job(phc, "wrong-password");
    sl_hash_job_t *both = verify_job(NULL, "right-password"); /* the dummy: false */
    both->hash = true;
    both->new_password_len = 9;
    memcpy(both->new_password, "brand-new", 9);
    assert_int_equal(sl_hash_pool_submit(pool, right), 0);
    assert_int_equal(sl_hash_pool_submit(pool, wrong), 0);
    assert_int_equal(sl_hash_pool_submit(pool, both), 0);
    assert_int_equal(sl_hash_pool_in_flight(pool), 3);
    sl_hash_job_t *done[3];
    collect(pool, done, 3);
    assert_true(right->verified);
    assert_false(wrong->verified);
    assert_false(both->verified);
    assert_int_equal(both->hash_rc, 0);
    assert_true(sl_password_verify(both->hash_out, sl_span_str("brand-new")));
    for (int i = 0; i < 3; i++) {
        assert_true(all_zero(done[i]->password, sizeof(done[i]->password)));
        assert_true(all_zero(done[i]->new_password, sizeof(done[i]->new_password)));
    }
    release_all(pool, done, 3);
    sl_hash_pool_destroy(pool);
}

static void test_queue_bound(void **state)
{
    (void)state;
    sl_hash_pool_t *pool;
    assert_int_equal(sl_hash_pool_create(1, 2, &pool), 0);
    sl_hash_job_t *a = verify_job(NULL, "one"), *b = verify_job(NULL, "two");
    sl_hash_job_t *c = verify_job(NULL, "three");
    assert_int_equal(sl_hash_pool_submit(pool, a), 0);
    assert_int_equal(sl_hash_pool_submit(pool, b), 0);
    assert_int_equal(sl_hash_pool_submit(pool, c), -EAGAIN); /* still ours */
    sl_hash_job_t *done[2];
    collect(pool, done, 2);
    /* Taken back but not released: still counted. */
    assert_int_equal(sl_hash_pool_submit(pool, c), -EAGAIN);
    sl_hash_pool_release(pool);
    assert_int_equal(sl_hash_pool_submit(pool, c), 0);
    sl_hash_pool_release(pool);
    sl_hash_job_free(done[0]);
    sl_hash_job_free(done[1]);
    /* c is queued or running: destroy waits for it and frees it. */
    sl_hash_pool_destroy(pool);
}

static void test_create_bounds(void **state)
{
    (void)state;
    sl_hash_pool_t *pool = (sl_hash_pool_t *)1;
    assert_int_equal(sl_hash_pool_create(0, 4, &pool), -EINVAL);
    assert_null(pool);
    assert_int_equal(sl_hash_pool_create(SL_HASH_POOL_THREADS_MAX + 1, 4, &pool), -EINVAL);
    assert_int_equal(sl_hash_pool_create(1, 0, &pool), -EINVAL);
    sl_hash_pool_destroy(NULL);
    sl_hash_job_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdicts_and_hashes),
        cmocka_unit_test(test_queue_bound),
        cmocka_unit_test(test_create_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
