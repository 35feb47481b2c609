/* What the real sluiced lets other people see: the modes of everything it
 * creates in its data directory, whatever the umask it was started with
 * (owner only, or group-readable with system.group_access), and the
 * tightening of an existing data directory that is wider; the generated
 * root password, which goes to a private file and never into the log or
 * a GetSnapshot archive. */
#define _GNU_SOURCE /* nftw and its FTW_* flags */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zip.h>
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>

#include "harness.h"

#define OK(expr) assert_int_equal((expr), 0)

/* Starts sluiced or ends the program as skipped (no io_uring here). */
static void start(th_server_t *srv, const th_options_t *opt)
{
    if (!th_start(srv, opt)) {
        fprintf(stderr, "io_uring is unavailable here: skipped\n");
        exit(77);
    }
}

static void data_path(const th_server_t *srv, char *out, size_t cap)
{
    snprintf(out, cap, "%s/data", srv->data_dir);
}

static bool exists_file(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* --- file modes --------------------------------------------------------------------------- */

/* The walk's expectations and findings (nftw has no context pointer). */
static struct {
    mode_t file_mode, dir_mode;
    unsigned files, dirs;
    /* Names that must turn up, so the walk is known to cover each kind of
     * file the server writes. */
    bool journal, snapshot, superblock, lock, segment, index, offset, purge_gen, jwt_key, revoked;
} walk;

static int check_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)type;
    const char *name = path + ftw->base;
    mode_t mode = st->st_mode & 07777;
    if (S_ISDIR(st->st_mode)) {
        if (mode != walk.dir_mode)
            fail_msg("%s: directory mode %04o, want %04o", path, mode, walk.dir_mode);
        walk.dirs++;
        return 0;
    }
    if (!S_ISREG(st->st_mode))
        fail_msg("%s: neither a file nor a directory (mode %o)", path, st->st_mode);
    /* The HTTP API's signing key is a secret: owner only, always. */
    mode_t want = strcmp(name, "http_jwt_key") == 0 ? 0600 : walk.file_mode;
    if (mode != want)
        fail_msg("%s: file mode %04o, want %04o", path, mode, want);
    walk.jwt_key |= strcmp(name, "http_jwt_key") == 0;
    walk.revoked |= strcmp(name, "http_revoked") == 0;
    walk.files++;
    size_t len = strlen(name);
    walk.journal |= strcmp(name, "journal.wal") == 0;
    walk.snapshot |= strcmp(name, "snapshot.bin") == 0;
    walk.superblock |= strncmp(name, "superblock.", 11) == 0;
    walk.lock |= strcmp(name, "sluiced.lock") == 0;
    walk.segment |= len > 4 && strcmp(name + len - 4, ".log") == 0;
    walk.index |= len > 6 && strcmp(name + len - 6, ".index") == 0;
    walk.offset |= strstr(path, "/offsets/consumers/") != NULL;
    walk.purge_gen |= strcmp(name, "purge.gen") == 0;
    return 0;
}

/* Every directory (the data directory included) and file under the server's
 * data directory has exactly these modes, and each kind of file is there. */
static void assert_modes(const th_server_t *srv, mode_t file_mode, mode_t dir_mode)
{
    char data[320];
    data_path(srv, data, sizeof(data));
    memset(&walk, 0, sizeof(walk));
    walk.file_mode = file_mode;
    walk.dir_mode = dir_mode;
    OK(nftw(data, check_entry, 16, FTW_PHYS));
    assert_true(walk.journal && walk.snapshot && walk.superblock && walk.lock);
    assert_true(walk.segment && walk.index && walk.offset && walk.purge_gen);
    assert_true(walk.jwt_key && walk.revoked);
    assert_true(walk.dirs >= 8);
}

/* Streams, an enforce_fsync topic with messages (segments and indexes on
 * disk), a stored consumer offset, a purge and a send after it (purge.gen), and enough metadata
 * operations for a checkpoint (snapshot, superblocks): every kind of file. */
static void write_everything(const th_server_t *srv)
{
    sl_client_t *c = th_client(srv->port, "iggy", "iggy");
    assert_non_null(c);
    OK(sl_client_create_stream(c, "s", NULL));
    sl_topic_options_t fsync = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 2, &fsync, NULL));
    OK(sl_client_create_topic(c, sl_id_name("s"), "purged", 1, &fsync, NULL));
    for (uint32_t p = 0; p < 2; p++) {
        sl_send_message_t m = {.id = {p + 1, 0}, .payload = "hello", .payload_len = 5};
        sl_send_result_t r;
        OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"),
                                   sl_partitioning_partition(p), &m, 1, &r));
        OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("purged"),
                                   sl_partitioning_partition(0), &m, 1, &r));
    }
    OK(sl_client_store_consumer_offset(c, sl_consumer_single(sl_id_num(7)), sl_id_name("s"),
                                       sl_id_name("t"), 0, 0, 0));
    OK(sl_client_purge_topic(c, sl_id_name("s"), sl_id_name("purged")));
    /* The purge's record is written before the partition's next write. */
    sl_send_message_t m = {.id = {9, 0}, .payload = "again", .payload_len = 5};
    sl_send_result_t r;
    OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("purged"),
                               sl_partitioning_partition(0), &m, 1, &r));
    sl_client_close(c);
}

/* With umask 000, a fresh data directory: directories 0700, files 0600. */
static void test_owner_only_whatever_the_umask(void **state)
{
    (void)state;
    th_server_t srv;
    th_options_t opt = {.umask_zero = true,
                        .extra_config = "[metadata]\ncheckpoint_interval = 4\n"};
    start(&srv, &opt);
    write_everything(&srv);
    assert_modes(&srv, 0600, 0700);
    /* A restart with the same umask recovers and adds nothing wider. */
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_options_t again = opt;
    again.data_dir = srv.data_dir;
    again.extra_config = NULL;
    start(&srv, &again);
    assert_modes(&srv, 0600, 0700);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* system.group_access = true: directories 0750, files 0640. */
static void test_group_access_whatever_the_umask(void **state)
{
    (void)state;
    static const char *const env[] = {"IGGY_SYSTEM_GROUP_ACCESS=true", NULL};
    th_server_t srv;
    th_options_t opt = {
        .umask_zero = true, .env = env, .extra_config = "[metadata]\ncheckpoint_interval = 4\n"};
    start(&srv, &opt);
    write_everything(&srv);
    assert_modes(&srv, 0640, 0750);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

static mode_t dir_mode(const char *path)
{
    struct stat st;
    OK(stat(path, &st));
    return st.st_mode & 07777;
}

/* An existing data directory wider than the setting (an older server's
 * 0755): its mode is set at start, with a log line; a group-access start
 * widens it to 0750 the same way, keeping a setgid bit. */
static void test_existing_directory_is_tightened(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, NULL);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    char data[320];
    data_path(&srv, data, sizeof(data));
    OK(chmod(data, 0755));

    th_options_t again = {.data_dir = srv.data_dir};
    start(&srv, &again);
    assert_int_equal(dir_mode(data), 0700);
    char want[512];
    snprintf(want, sizeof(want),
             "data directory %s: mode 0755 changed to 0700 (system.group_access = false)", data);
    assert_non_null(strstr(th_log(&srv), want));
    assert_int_equal(th_stop(&srv, SIGTERM), 0);

    OK(chmod(data, 02700));
    static const char *const env[] = {"IGGY_SYSTEM_GROUP_ACCESS=true", NULL};
    again.env = env;
    start(&srv, &again);
    assert_int_equal(dir_mode(data), 02750);
    snprintf(want, sizeof(want),
             "data directory %s: mode 0700 changed to 0750 (system.group_access = true)", data);
    assert_non_null(strstr(th_log(&srv), want));
    assert_int_equal(th_stop(&srv, SIGTERM), 0);

    /* Already right: nothing is said. */
    start(&srv, &again);
    assert_null(strstr(th_log(&srv), "changed to"));
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* --- the generated root password -------------------------------------------------------- */

/* Reads a whole file into buf (NUL-terminated); returns its length. */
static size_t read_text(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

/* Counts the archive's entries whose bytes contain needle; every entry must
 * read back whole. *entries gets the number of entries. */
static unsigned zip_entries_containing(const uint8_t *zip, size_t len, const char *needle,
                                       unsigned *entries)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(zip, len, 0, &ze);
    assert_non_null(src);
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    if (!za)
        fail_msg("the snapshot is not a ZIP archive: %s", zip_error_strerror(&ze));
    unsigned found = 0;
    *entries = (unsigned)zip_get_num_entries(za, 0);
    for (unsigned i = 0; i < *entries; i++) {
        zip_stat_t st;
        OK(zip_stat_index(za, i, 0, &st));
        char *text = malloc(st.size + 1);
        assert_non_null(text);
        zip_file_t *f = zip_fopen_index(za, i, 0);
        assert_non_null(f);
        assert_true(zip_fread(f, text, st.size) == (zip_int64_t)st.size);
        zip_fclose(f);
        text[st.size] = '\0';
        if (memmem(text, st.size, needle, strlen(needle)))
            found++;
        free(text);
    }
    zip_discard(za);
    zip_error_fini(&ze);
    return found;
}

/* Without root credentials the server generates a password: it is in
 * <data>/root_password (0600, even started with umask 000) and works for a
 * login, the log says where it is but not what it is, and a user with only
 * read_servers finds it in no GetSnapshot entry (ServerLogs included). */
static void test_generated_root_password_is_private(void **state)
{
    (void)state;
    th_server_t srv;
    th_options_t opt = {.no_root_credentials = true, .umask_zero = true};
    start(&srv, &opt);
    char data[320], file[400];
    data_path(&srv, data, sizeof(data));
    snprintf(file, sizeof(file), "%s/root_password", data);
    char want[512];
    snprintf(want, sizeof(want),
             "created the root user 'iggy' with a generated password, written to %s ", file);
    assert_non_null(strstr(th_log(&srv), want));
    struct stat st;
    OK(stat(file, &st));
    assert_int_equal(st.st_mode & 07777, 0600);
    char password[128];
    size_t n = read_text(file, password, sizeof(password));
    assert_true(n > 16 && password[n - 1] == '\n');
    password[n - 1] = '\0';
    assert_null(strstr(th_log(&srv), password));

    sl_client_t *root = th_client(srv.port, "iggy", password);
    assert_non_null(root);
    sl_permission_set_t perms = {.read_servers = true};
    OK(sl_client_create_user(root, "monitor", "monitor-pass", SL_USER_STATUS_ACTIVE, &perms, NULL));
    sl_client_close(root);
    sl_client_t *monitor = th_client(srv.port, "monitor", "monitor-pass");
    assert_non_null(monitor);
    static const uint8_t logs = SL_SNAPSHOT_TYPE_SERVER_LOGS, all = SL_SNAPSHOT_TYPE_ALL;
    const uint8_t *zip;
    size_t len;
    unsigned entries;
    OK(sl_client_get_snapshot(monitor, SL_SNAPSHOT_COMPRESSION_STORED, &logs, 1, &zip, &len));
    /* The ServerLogs entry is the real log: it has the line naming the file. */
    assert_int_equal(zip_entries_containing(zip, len, want, &entries), 1);
    assert_int_equal(entries, 1);
    assert_int_equal(zip_entries_containing(zip, len, password, &entries), 0);
    OK(sl_client_get_snapshot(monitor, SL_SNAPSHOT_COMPRESSION_DEFLATED, &all, 1, &zip, &len));
    assert_int_equal(zip_entries_containing(zip, len, password, &entries), 0);
    assert_int_equal(entries, 5);
    sl_client_close(monitor);

    /* A restart keeps the stored root user: the file is not written again. */
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    OK(unlink(file));
    th_options_t again = opt;
    again.data_dir = srv.data_dir;
    start(&srv, &again);
    assert_false(exists_file(file));
    assert_null(strstr(th_log(&srv), "generated password"));
    root = th_client(srv.port, "iggy", password);
    assert_non_null(root);
    sl_client_close(root);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

/* --- nothing secret in a snapshot -------------------------------------------------------- */

/* The named entry's text (NUL-terminated, malloc'd), or NULL. */
static char *zip_entry_text(const uint8_t *zip, size_t len, const char *name)
{
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = zip_source_buffer_create(zip, len, 0, &ze);
    assert_non_null(src);
    zip_t *za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
    assert_non_null(za);
    char *text = NULL;
    zip_stat_t st;
    if (zip_stat(za, name, 0, &st) == 0) {
        text = malloc(st.size + 1);
        assert_non_null(text);
        zip_file_t *f = zip_fopen(za, name, 0);
        assert_non_null(f);
        assert_true(zip_fread(f, text, st.size) == (zip_int64_t)st.size);
        zip_fclose(f);
        text[st.size] = '\0';
    }
    zip_discard(za);
    zip_error_fini(&ze);
    return text;
}

/* A process whose arguments hold a secret, as someone typing
 * `sluice -p PASSWORD` would leave: sh stays alive while sleep runs. */
static pid_t spawn_with_secret_argv(const char *secret)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* Its own group, so the test ends sh and sleep together; no output
         * pipe of ours kept open by a leftover sleep. */
        setpgid(0, 0);
        int null_fd = open("/dev/null", O_RDWR);
        dup2(null_fd, 0);
        dup2(null_fd, 1);
        dup2(null_fd, 2);
        execl("/bin/sh", "sh", "-c", "sleep 30; exit 0", "sh", secret, (char *)NULL);
        _exit(127);
    }
    /* Wait until the exec shows in /proc: the argument is really there. */
    char path[64], cmdline[512];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(cmdline, 1, sizeof(cmdline), f) : 0;
        if (f)
            fclose(f);
        if (memmem(cmdline, n, secret, strlen(secret)))
            return pid;
        usleep(10 * 1000);
    }
    fail_msg("the child's command line never showed its argument");
    return -1;
}

/* GetSnapshot with every section: no process's arguments (a marker in a
 * child's argv), no configured secret (the root password, given by the
 * environment) in any entry; the process list still lists the child. */
static void test_snapshot_holds_no_secret(void **state)
{
    (void)state;
    static const char root_password[] = "Configured-R00t-Secret";
    static const char typed[] = "--password=Typed-Secret-7731";
    th_server_t srv;
    th_options_t opt = {.root_username = "admin", .root_password = root_password};
    start(&srv, &opt);
    pid_t child = spawn_with_secret_argv(typed);
    sl_client_t *c = th_client(srv.port, "admin", root_password);
    assert_non_null(c);
    static const uint8_t all = SL_SNAPSHOT_TYPE_ALL, ps = SL_SNAPSHOT_TYPE_PROCESS_LIST;
    const uint8_t *zip;
    size_t len;
    unsigned entries;
    OK(sl_client_get_snapshot(c, SL_SNAPSHOT_COMPRESSION_DEFLATED, &all, 1, &zip, &len));
    assert_int_equal(zip_entries_containing(zip, len, "Typed-Secret-7731", &entries), 0);
    assert_int_equal(entries, 5);
    assert_int_equal(zip_entries_containing(zip, len, root_password, &entries), 0);
    OK(sl_client_get_snapshot(c, SL_SNAPSHOT_COMPRESSION_STORED, &ps, 1, &zip, &len));
    char *list = zip_entry_text(zip, len, "process_list.txt");
    assert_non_null(list);
    assert_null(strstr(list, "Typed-Secret-7731"));
    char line[64];
    snprintf(line, sizeof(line), "\n%7d %7d ", (int)child, (int)getpid());
    const char *at = strstr(list, line);
    if (!at)
        fail_msg("the child %d is not listed:\n%s", (int)child, list);
    const char *end = strchr(at + 1, '\n');
    assert_non_null(end);
    assert_true(end - at > 4 && memcmp(end - 3, " sh", 3) == 0);
    free(list);
    sl_client_close(c);
    kill(-child, SIGKILL);
    waitpid(child, NULL, 0);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_only_whatever_the_umask),
        cmocka_unit_test(test_group_access_whatever_the_umask),
        cmocka_unit_test(test_existing_directory_is_tightened),
        cmocka_unit_test(test_generated_root_password_is_private),
        cmocka_unit_test(test_snapshot_holds_no_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
