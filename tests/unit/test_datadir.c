/* The data directory's owner lock (server/datadir.h): one holder at a time,
 * even within one process; the lock survives the closing of another
 * descriptor of the lock file (where a classic POSIX record lock would be
 * dropped); the refusal names the holder's pid; a SIGKILLed holder leaves
 * nothing that blocks the next one. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/io.h"
#include "server/datadir.h"
#include "tu_tmpdir.h"

typedef struct fixture {
    char root[PATH_MAX];
    char data[PATH_MAX]; /* <root>/data, not created by the fixture */
    char lock[PATH_MAX];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_true(tu_tmpdir_make(f->root, "sl-datadir"));
    assert_true(tu_path(f->data, f->root, "data"));
    assert_true(tu_path(f->lock, f->data, SL_DATADIR_LOCK_FILE));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    tu_tmpdir_remove(f->root);
    free(f);
    return 0;
}

/* Takes the lock and fails the test when it is refused. */
static int lock_ok(const fixture_t *f)
{
    char err[512] = "";
    int fd = -1;
    int rc = sl_datadir_lock(f->data, &fd, err, sizeof(err));
    if (rc != 0)
        fail_msg("lock refused: %s", err);
    assert_true(fd >= 0);
    return fd;
}

/* Asserts the lock is refused because pid holds it. */
static void assert_held_by(const fixture_t *f, long pid)
{
    char err[512] = "";
    int fd = 7;
    assert_true(sl_datadir_lock(f->data, &fd, err, sizeof(err)) < 0);
    assert_int_equal(fd, -1);
    char want[3 * PATH_MAX];
    snprintf(want, sizeof(want),
             "data directory %s is in use by another sluiced (pid %ld, lock %s)", f->data, pid,
             f->lock);
    if (!strstr(err, want))
        fail_msg("got \"%s\", want \"%s\"", err, want);
}

static long file_pid(const char *path)
{
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    long pid = 0;
    assert_int_equal(fscanf(fp, "%ld", &pid), 1);
    fclose(fp);
    return pid;
}

static void test_one_holder_per_directory(void **state)
{
    fixture_t *f = *state;
    int fd = lock_ok(f); /* creates the directory */
    assert_int_equal(file_pid(f->lock), (long)getpid());
    /* Another taker in the same process is refused too: the lock belongs to
     * the open file, not to the process. */
    assert_held_by(f, (long)getpid());

    /* Opening and closing the lock file elsewhere in the process (a backup
     * walk, a diagnostic) does not let go of it. */
    int other = open(f->lock, O_RDONLY);
    assert_true(other >= 0);
    close(other);
    assert_held_by(f, (long)getpid());

    sl_datadir_unlock(fd);
    fd = lock_ok(f);
    sl_datadir_unlock(fd);
}

/* A holder killed with SIGKILL: the kernel let go, the next taker gets it
 * and writes its own pid over the dead one's. */
static void test_killed_holder_leaves_no_stale_lock(void **state)
{
    fixture_t *f = *state;
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        char err[512];
        int fd;
        char ok = sl_datadir_lock(f->data, &fd, err, sizeof(err)) == 0 ? 'y' : 'n';
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char ok = 0;
    assert_int_equal(read(ready[0], &ok, 1), 1);
    assert_int_equal(ok, 'y');
    assert_held_by(f, (long)child);
    assert_int_equal(kill(child, SIGKILL), 0);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFSIGNALED(status));
    int fd = lock_ok(f);
    assert_int_equal(file_pid(f->lock), (long)getpid());
    sl_datadir_unlock(fd);
    close(ready[0]);
    close(ready[1]);
}

/* A lock file that says nothing about its holder: the message says so. */
static void test_unknown_holder(void **state)
{
    fixture_t *f = *state;
    int fd = lock_ok(f);
    assert_int_equal(ftruncate(fd, 0), 0);
    char err[512] = "";
    int other = -1;
    assert_true(sl_datadir_lock(f->data, &other, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "is in use by another sluiced (pid unknown, lock "));
    sl_datadir_unlock(fd);
}

static void test_missing_parent(void **state)
{
    fixture_t *f = *state;
    char deep[PATH_MAX];
    assert_true(tu_path(deep, f->root, "no/such/dir"));
    char err[512] = "";
    int fd = -1;
    assert_true(sl_datadir_lock(deep, &fd, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "cannot create the data directory"));
    assert_non_null(strstr(err, "No such file or directory"));
}

/* A private file is 0600 whatever the group setting and whatever mode an
 * earlier file of that name had, and replaces its contents. */
static void test_write_private(void **state)
{
    fixture_t *f = *state;
    mode_t saved = umask(0);
    char path[PATH_MAX], old[PATH_MAX];
    assert_true(tu_path(old, f->root, "secret"));
    FILE *fp = fopen(old, "w");
    assert_non_null(fp);
    fputs("an older and longer secret\n", fp);
    fclose(fp);
    assert_int_equal(chmod(old, 0644), 0);
    sl_io_set_group_access(true);
    assert_int_equal(sl_datadir_write_private(f->root, "secret", "s3cret\n", path), 0);
    sl_io_set_group_access(false);
    umask(saved);
    assert_string_equal(path, old);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    char text[64] = "";
    fp = fopen(path, "r");
    assert_non_null(fp);
    size_t n = fread(text, 1, sizeof(text) - 1, fp);
    fclose(fp);
    text[n] = '\0';
    assert_string_equal(text, "s3cret\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_one_holder_per_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_holder_leaves_no_stale_lock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_holder, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_parent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_private, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
