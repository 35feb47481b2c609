/* Helpers of the tests/crash programs (crash_util.h). */
#include "crash_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
// clang-format off
#include <cmocka.h>
// clang-format on

/* Messages asked per poll while reading a partition back. */
#define READ_CHUNK 2000u

uint64_t cu_seed(void)
{
    const char *env = getenv("SLUICE_CRASH_SEED");
    if (env && env[0])
        return strtoull(env, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
}

uint64_t cu_rand(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15u;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Du;
}

uint64_t cu_rand_range(uint64_t *state, uint64_t lo, uint64_t hi)
{
    return lo + cu_rand(state) % (hi - lo + 1);
}

size_t cu_payload(uint64_t n, uint8_t out[CU_PAYLOAD_MAX])
{
    int len = snprintf((char *)out, CU_PAYLOAD_MAX, "%010" PRIu64 "|", n);
    size_t filler = (size_t)((n * 37u) % 300u);
    for (size_t i = 0; i < filler; i++)
        out[(size_t)len + i] = (uint8_t)(n * 131u + i * 7u);
    return (size_t)len + filler;
}

sl_msg_id_t cu_id(uint64_t n, uint64_t tag)
{
    return (sl_msg_id_t){n + 1, tag};
}

int cu_send(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t partition, uint64_t tag,
            uint64_t first, uint32_t count, sl_send_result_t *out)
{
    int rc = sl_client_send_begin(c, stream, topic, sl_partitioning_partition(partition));
    if (rc == 0)
        rc = sl_client_send_reserve(c, (size_t)count * (48u + CU_PAYLOAD_MAX));
    uint8_t payload[CU_PAYLOAD_MAX];
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        sl_send_message_t m = {.id = cu_id(first + i, tag), .payload = payload};
        m.payload_len = cu_payload(first + i, payload);
        rc = sl_client_send_add(c, &m);
    }
    if (rc != 0) {
        sl_client_send_abandon(c);
        return rc;
    }
    return sl_client_send_commit(c, out);
}

void cu_send_ok(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t partition, uint64_t tag,
                uint64_t first, uint32_t count, uint64_t expect_offset)
{
    sl_send_result_t r;
    assert_int_equal(cu_send(c, stream, topic, partition, tag, first, count, &r), 0);
    assert_true(r.confirmed);
    assert_int_equal(r.partition_id, partition);
    assert_int_equal(r.base_offset, expect_offset);
}

void cu_stop_clean(th_server_t *srv)
{
    int status = th_stop(srv, SIGTERM);
    if (status != 0)
        fail_msg("sluiced stopped with wait status 0x%x:\n%s", (unsigned)status, th_log(srv));
}

bool cu_start_with_faults(th_server_t *srv, const th_options_t *opt, char *fault_file,
                          size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(fault_file, cap, "%s/sluice-faults-XXXXXX", tmp ? tmp : "/tmp");
    int fd = mkstemp(fault_file);
    if (fd < 0)
        return false;
    close(fd);
    setenv("SLUICE_FAULT_FILE", fault_file, 1);
    if (!th_start(srv, opt)) {
        unlink(fault_file);
        exit(77);
    }
    return true;
}

void cu_set_fault(const char *fault_file, const char *line)
{
    char tmp[600];
    assert_true((size_t)snprintf(tmp, sizeof(tmp), "%s.new", fault_file) < sizeof(tmp));
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", line);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(rename(tmp, fault_file), 0);
}

void cu_stop_with_faults(th_server_t *srv, const char *fault_file)
{
    cu_stop_clean(srv);
    th_cleanup(srv);
    unlink(fault_file);
}

sl_client_t *cu_connect(const th_server_t *srv)
{
    sl_client_options_t o = {.request_timeout_ms = 20000};
    sl_client_t *c = NULL;
    assert_int_equal(sl_client_connect("127.0.0.1", srv->port, &o, &c), 0);
    assert_int_equal(sl_client_login(c, "iggy", "iggy", NULL), 0);
    return c;
}

bool cu_message_number(const sl_polled_message_t *m, uint64_t tag, uint64_t *n)
{
    char digits[11] = {0};
    if (m->payload_len < 11 || m->headers_len != 0)
        return false;
    memcpy(digits, m->payload, 10);
    for (int i = 0; i < 10; i++)
        if (digits[i] < '0' || digits[i] > '9')
            return false;
    *n = strtoull(digits, NULL, 10);
    uint8_t want[CU_PAYLOAD_MAX];
    size_t len = cu_payload(*n, want);
    sl_msg_id_t id = cu_id(*n, tag);
    return m->payload_len == len && memcmp(m->payload, want, len) == 0 && m->id.lo == id.lo &&
           m->id.hi == id.hi;
}

pid_t cu_spawn(const th_server_t *srv)
{
    const char *sluiced = getenv("SLUICE_SLUICED");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(srv->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd < 0)
            _exit(126);
        dup2(fd, 2);
        dup2(fd, 1);
        close(fd);
        execl(sluiced ? sluiced : "./sluiced", "sluiced", "--config", srv->config_path,
              "--with-default-root-credentials", (char *)NULL);
        _exit(127);
    }
    return pid;
}

uint64_t cu_rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    uint64_t kib = 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kib = strtoull(line + 6, NULL, 10);
    fclose(f);
    return kib;
}

/* Checks one polled message against the numbered message its payload names. */
static uint64_t check_message(const sl_polled_message_t *m, uint64_t tag)
{
    char digits[11] = {0};
    assert_true(m->payload_len >= 11);
    memcpy(digits, m->payload, 10);
    uint64_t n = strtoull(digits, NULL, 10);
    uint8_t want[CU_PAYLOAD_MAX];
    size_t len = cu_payload(n, want);
    if (m->payload_len != len || memcmp(m->payload, want, len) != 0)
        fail_msg("offset %" PRIu64 ": payload of message %" PRIu64 " differs", m->offset, n);
    sl_msg_id_t id = cu_id(n, tag);
    if (m->id.lo != id.lo || m->id.hi != id.hi)
        fail_msg("offset %" PRIu64 ": id %" PRIu64 ":%" PRIu64 " is not message %" PRIu64
                 " of run %" PRIu64,
                 m->offset, m->id.hi, m->id.lo, n, tag);
    assert_int_equal(m->headers_len, 0);
    return n;
}

uint64_t cu_read_all(sl_client_t *c, sl_id_t stream, sl_id_t topic, uint32_t partition,
                     uint64_t tag, uint64_t *numbers, uint64_t cap)
{
    uint64_t next = 0;
    for (;;) { /* every turn reads at least one message or ends */
        sl_polled_messages_t out;
        int rc = sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), stream, topic,
                                         partition, sl_poll_offset(next), READ_CHUNK, false, &out);
        if (rc != 0)
            fail_msg("poll of partition %u from offset %" PRIu64 ": %d (%s)", partition, next, rc,
                     sl_strerror(rc));
        assert_false(out.resync_required);
        assert_int_equal(out.partition_id, partition);
        if (out.count == 0) {
            /* The end: the partition's newest offset is the last one read. */
            if (next > 0)
                assert_int_equal(out.current_offset, next - 1);
            return next;
        }
        for (uint32_t i = 0; i < out.count; i++) {
            const sl_polled_message_t *m = &out.messages[i];
            if (m->offset != next)
                fail_msg("partition %u: offset %" PRIu64 " where %" PRIu64 " must follow",
                         partition, m->offset, next);
            uint64_t n = check_message(m, tag);
            if (next < cap)
                numbers[next] = n;
            next++;
        }
        assert_true(out.current_offset >= next - 1);
    }
}

/* --- files ------------------------------------------------------------------------------ */

void cu_partition_dir(const th_server_t *srv, uint32_t stream_id, uint32_t topic_id,
                      uint32_t partition, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/data/streams/%u/topics/%u/partitions/%u", srv->data_dir,
                     stream_id, topic_id, partition);
    assert_true(n > 0 && (size_t)n < cap);
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

size_t cu_segments(const char *dir, uint64_t *starts, size_t cap)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len != 24 || strcmp(e->d_name + 20, ".log") != 0)
            continue;
        assert_true(n < cap);
        starts[n++] = strtoull(e->d_name, NULL, 10);
    }
    closedir(d);
    qsort(starts, n, sizeof(*starts), u64_cmp);
    return n;
}

void cu_segment_path(const char *dir, uint64_t start, const char *ext, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%s/%020" PRIu64 "%s", dir, start, ext);
    assert_true(n > 0 && (size_t)n < cap);
}

uint64_t cu_file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        fail_msg("stat %s failed", path);
    return (uint64_t)st.st_size;
}

void cu_truncate(const char *path, uint64_t size)
{
    if (truncate(path, (off_t)size) != 0)
        fail_msg("truncate %s failed", path);
}

uint8_t *cu_read_file(const char *path, size_t *len)
{
    size_t size = (size_t)cu_file_size(path);
    uint8_t *p = malloc(size ? size : 1);
    assert_non_null(p);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, p, size, 0), (ssize_t)size);
    close(fd);
    *len = size;
    return p;
}

void cu_write_at(const char *path, uint64_t off, const void *p, size_t n)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, p, n, (off_t)off), (ssize_t)n);
    close(fd);
}

void cu_garble(const char *path, uint64_t off, size_t n)
{
    size_t len;
    uint8_t *all = cu_read_file(path, &len);
    assert_true(off + n <= len);
    for (size_t i = 0; i < n; i++)
        all[off + i] ^= 0xA5;
    cu_write_at(path, off, all + off, n);
    free(all);
}

size_t cu_log_batches(const char *path, cu_batch_t *out, size_t cap)
{
    size_t len;
    uint8_t *all = cu_read_file(path, &len);
    size_t n = 0;
    uint64_t pos = 0;
    while (pos + 256 <= len) {
        uint64_t length, base;
        uint32_t count;
        memcpy(&base, all + pos + 8, 8);
        memcpy(&length, all + pos + 32, 8);
        memcpy(&count, all + pos + 48, 4);
        if (length < 256 + 48 || pos + length > len)
            break;
        assert_true(n < cap);
        out[n++] = (cu_batch_t){pos, length, base, count};
        pos += length;
    }
    free(all);
    return n;
}
