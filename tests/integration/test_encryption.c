/* At-rest encryption against the real sluiced (docs/security.md): messages
 * round-trip byte for byte through restarts while no plaintext reaches the
 * disk; a wrong key, a missing key and an unencrypted directory are refused
 * at start; a key rotation keeps old messages readable through
 * previous_key; a byte changed on disk never comes back as data. */
#define _GNU_SOURCE
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
// clang-format off
#include <cmocka.h>
// clang-format on

#include <sluice/client.h>
#include <sluice/error.h>

#include "base/xxh3.h"
#include "harness.h"
#include "wire/batch.h"

#define OK(expr) assert_int_equal((expr), 0)

/* Two keys (base64 of 32 bytes) and the settings that name them. */
#define KEY_A "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
#define KEY_B "oKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr8="
/* Snapshots every 3 metadata operations, so restarts read sealed snapshots
 * as well as sealed journal entries. */
#define CHECKPOINTS "[metadata]\ncheckpoint_interval = 3\n\n"
#define WITH_A CHECKPOINTS "[system.encryption]\nenabled = true\nkey = \"" KEY_A "\"\n"
#define WITH_B CHECKPOINTS "[system.encryption]\nenabled = true\nkey = \"" KEY_B "\"\n"
#define ROTATED                                                                                    \
    CHECKPOINTS "[system.encryption]\nenabled = true\nkey = \"" KEY_B "\"\nprevious_key = \"" KEY_A "\"\n"
#define MARKER "PLAINTEXT-MARKER-0123456789"
/* Names only the metadata holds. */
#define META_MARKER "meta-marker-stream-4711"
#define USER_MARKER "markeruser4711"

static void start(th_server_t *srv, const char *config, const char *data_dir)
{
    th_options_t opt = {.extra_config = config, .data_dir = data_dir};
    int status = 0;
    if (!th_try_start(srv, &opt, &status)) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
            fprintf(stderr, "io_uring is unavailable here: skipped\n");
            exit(77);
        }
        fail_msg("sluiced did not start (status %d):\n%s", status, th_log(srv));
    }
}

static void restart(th_server_t *srv, const char *config)
{
    char dir[256];
    snprintf(dir, sizeof(dir), "%s", srv->data_dir);
    start(srv, config, dir);
}

/* A restart that must be refused: exit 1 (the data directory) or 2 (the
 * settings), never listening, the log naming why. */
static void assert_refused(th_server_t *srv, const char *config, int code, const char *why)
{
    char dir[256];
    snprintf(dir, sizeof(dir), "%s", srv->data_dir);
    th_options_t opt = {.extra_config = config, .data_dir = dir};
    int status = 0;
    assert_false(th_try_start(srv, &opt, &status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), code);
    if (!strstr(th_log(srv), why))
        fail_msg("expected \"%s\" in the log:\n%s", why, th_log(srv));
    assert_null(strstr(th_log(srv), "listening on"));
}

/* Message i: a payload holding MARKER and i, every other one with a header. */
static void message(uint32_t i, char *payload, size_t cap, sl_send_message_t *m, sl_header_t *h)
{
    int n = snprintf(payload, cap, "%s #%u %0*u", MARKER, i, (int)(i % 50), i);
    *h = (sl_header_t){sl_hv_str("secret-header"), sl_hv_str(MARKER)};
    *m = (sl_send_message_t){.id = {i + 1, 0xE0}, .payload = payload, .payload_len = (size_t)n,
                             .headers = i % 2 ? h : NULL, .headers_count = i % 2};
}

static void send_range(sl_client_t *c, uint32_t first, uint32_t n)
{
    sl_send_message_t m[32];
    sl_header_t h[32];
    char payload[32][128];
    assert_true(n <= 32);
    for (uint32_t i = 0; i < n; i++)
        message(first + i, payload[i], sizeof(payload[i]), &m[i], &h[i]);
    OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"), sl_partitioning_partition(0),
                               m, n, NULL));
}

/* Polls n messages from offset first and checks each is exactly what was sent. */
static int poll_check(sl_client_t *c, uint32_t first, uint32_t n)
{
    sl_polled_messages_t out;
    int rc = sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                     sl_id_name("t"), 0, sl_poll_offset(first), n, false, &out);
    if (rc != 0)
        return rc;
    assert_int_equal(out.count, n);
    for (uint32_t i = 0; i < n; i++) {
        const sl_polled_message_t *p = &out.messages[i];
        char want[128];
        sl_send_message_t m;
        sl_header_t h;
        message(first + i, want, sizeof(want), &m, &h);
        assert_int_equal(p->offset, first + i);
        assert_int_equal(p->id.lo, first + i + 1);
        assert_int_equal(p->payload_len, m.payload_len);
        assert_memory_equal(p->payload, want, m.payload_len);
        assert_int_equal(p->headers_len == 0, m.headers_count == 0);
        if (m.headers_count) {
            sl_header_iter_t it;
            sl_header_t got;
            OK(sl_polled_message_headers(p, &it));
            assert_true(sl_header_next(&it, &got));
            assert_int_equal(got.value.len, strlen(MARKER));
            assert_memory_equal(got.value.bytes, MARKER, strlen(MARKER));
        }
    }
    return 0;
}

static sl_client_t *login(th_server_t *srv)
{
    sl_client_t *c = th_client(srv->port, "iggy", "iggy");
    assert_non_null(c);
    return c;
}

/* --- files on disk ------------------------------------------------------------------------- */

static char found_log[512];
static bool marker_seen, meta_marker_seen, snapshot_seen;

static bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    return memmem(buf, n, needle, strlen(needle)) != NULL;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || st->st_size == 0)
        return 0;
    size_t len = strlen(path);
    if (len > 4 && strcmp(path + len - 4, ".log") == 0 && strstr(path, "/partitions/") &&
        !strstr(path, "sluiced.log"))
        snprintf(found_log, sizeof(found_log), "%s", path);
    if (strstr(path, "sluiced.log") || strstr(path, "sluiced.toml"))
        return 0;
    marker_seen |= file_has(path, MARKER);
    meta_marker_seen |= file_has(path, META_MARKER) || file_has(path, USER_MARKER);
    snapshot_seen |= strstr(path, "/metadata/snapshot") != NULL;
    return 0;
}

/* Walks the data directory: the partition's segment and whether any file
 * (the server's own log and config aside) holds the marker text. */
static void scan(const th_server_t *srv)
{
    found_log[0] = '\0';
    marker_seen = meta_marker_seen = snapshot_seen = false;
    assert_int_equal(nftw(srv->data_dir, visit, 16, FTW_PHYS), 0);
    assert_true(found_log[0] != '\0');
}

/* --- tests --------------------------------------------------------------------------------- */

static void test_round_trip_restart_and_disk(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, WITH_A, NULL);
    assert_null(strstr(th_log(&srv), KEY_A)); /* the key is never logged */
    assert_non_null(strstr(th_log(&srv), "encryption: on"));
    sl_client_t *c = login(&srv);
    OK(sl_client_create_stream(c, "s", NULL));
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, NULL, NULL));
    OK(sl_client_create_stream(c, META_MARKER, NULL));
    OK(sl_client_create_user(c, USER_MARKER, "secret-password", 1, NULL, NULL));
    send_range(c, 0, 20);
    send_range(c, 20, 1);
    OK(poll_check(c, 0, 21)); /* from the journal */
    OK(poll_check(c, 5, 7));  /* a sliced record */
    sl_client_close(c);
    assert_int_equal(th_stop(&srv, SIGTERM), 0);
    scan(&srv);
    assert_false(marker_seen);
    assert_false(meta_marker_seen); /* names in the journal and the snapshot are sealed */
    assert_true(snapshot_seen);

    restart(&srv, WITH_A);
    c = login(&srv);
    const sl_stream_t *named;
    OK(sl_client_get_stream(c, sl_id_name(META_MARKER), &named));
    sl_client_t *user = th_client(srv.port, USER_MARKER, "secret-password");
    assert_non_null(user);
    sl_client_close(user);
    OK(poll_check(c, 0, 21)); /* from the segment */
    OK(poll_check(c, 19, 2));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);

    /* The wrong key, no key, encryption off: refused, data untouched. */
    assert_refused(&srv, WITH_B, 1, "does not open data directory");
    assert_refused(&srv, "", 1, "holds encrypted data");
    assert_refused(&srv, "[system.encryption]\nenabled = true\n", 2,
                   "system.encryption.key is empty");
    assert_refused(&srv, "[system.encryption]\nenabled = true\nkey = \"AAAA\"\n", 2,
                   "decodes to 3 bytes");
    restart(&srv, WITH_A);
    c = login(&srv);
    OK(poll_check(c, 0, 21));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

static uint64_t invocation(const uint8_t *nonce)
{
    uint64_t v = 0;
    for (int i = 4; i < 12; i++)
        v = v << 8 | nonce[i];
    return v;
}

/* Reads every sealed message's nonce from the segment at path into
 * nonces (up to max); returns how many. */
static size_t read_nonces(const char *path, uint8_t (*nonces)[12], size_t max)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t seg[256 * 1024];
    size_t n = fread(seg, 1, sizeof(seg), f), pos = 0, got = 0;
    fclose(f);
    while (n - pos >= SL_BATCH_HEADER_SIZE) {
        size_t len = (size_t)sl_load_u64(seg + pos + SL_BATCH_OFF_LENGTH);
        uint32_t count = sl_load_u32(seg + pos + SL_BATCH_OFF_COUNT);
        assert_true(len >= SL_BATCH_HEADER_SIZE && len <= n - pos);
        size_t at = pos + SL_BATCH_HEADER_SIZE;
        for (uint32_t i = 0; i < count && got < max; i++) {
            assert_true(at + SL_FRAME_HEADER_SIZE + 12 <= pos + len);
            memcpy(nonces[got++], seg + at + SL_FRAME_HEADER_SIZE, 12);
            at += SL_FRAME_HEADER_SIZE + sl_load_u32(seg + at + SL_FRAME_OFF_PAYLOAD_LENGTH) +
                  sl_load_u32(seg + at + SL_FRAME_OFF_HEADERS_LENGTH);
        }
        pos += len;
    }
    return got;
}

/* The nonce scheme (docs/security.md): a random start counted up by one
 * per message. Messages sealed before and after a restart, and by each
 * run, all carry distinct nonces; within a run they step by one. */
static void test_nonces_across_restart(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, WITH_A, NULL);
    sl_client_t *c = login(&srv);
    OK(sl_client_create_stream(c, "s", NULL));
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, NULL, NULL));
    send_range(c, 0, 20);
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    restart(&srv, WITH_A);
    c = login(&srv);
    send_range(c, 20, 20);
    OK(poll_check(c, 0, 40));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    scan(&srv);
    uint8_t nonces[64][12];
    assert_int_equal(read_nonces(found_log, nonces, 64), 40);
    for (size_t i = 0; i < 40; i++)
        for (size_t j = i + 1; j < 40; j++)
            assert_memory_not_equal(nonces[i], nonces[j], 12);
    for (size_t i = 1; i < 40; i++) {
        if (i == 20)
            continue; /* the restart: a new random start */
        /* The 4 fixed bytes stay; the 8-byte invocation field steps by one
         * (modulo 2^64). */
        assert_memory_equal(nonces[i], nonces[i - 1], 4);
        assert_true(invocation(nonces[i]) == invocation(nonces[i - 1]) + 1);
    }
    th_cleanup(&srv);
}

static void test_unencrypted_directory_refused(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, NULL, NULL);
    sl_client_t *c = login(&srv);
    OK(sl_client_create_stream(c, "s", NULL));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    assert_refused(&srv, WITH_A, 1, "holds data written without encryption");
    /* Refused without a trace: the directory still starts as it was. */
    restart(&srv, ""); /* "": the file is rewritten without encryption */
    c = login(&srv);
    const sl_stream_t *st;
    OK(sl_client_get_stream(c, sl_id_name("s"), &st));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

static void test_key_rotation(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, WITH_A, NULL);
    sl_client_t *c = login(&srv);
    OK(sl_client_create_stream(c, "s", NULL));
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, NULL, NULL));
    send_range(c, 0, 10);
    sl_client_close(c);
    th_stop(&srv, SIGTERM);

    /* Step 1: key B, previous_key A. Old messages read, new ones use B. */
    restart(&srv, ROTATED);
    assert_non_null(strstr(th_log(&srv), "key rotation"));
    assert_null(strstr(th_log(&srv), KEY_B));
    c = login(&srv);
    OK(poll_check(c, 0, 10));
    send_range(c, 10, 10);
    OK(poll_check(c, 0, 20));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    /* The restart emptied the plaintext tail: A's messages were opened (with
     * previous_key) both times, B's came from the tail. */
    assert_non_null(strstr(th_log(&srv), "10 messages served from it, 20 decrypted"));

    /* Key A alone no longer opens the directory. */
    assert_refused(&srv, WITH_A, 1, "does not open data directory");
    /* Step 2, too early: previous_key dropped while A's messages remain.
     * B's messages read; A's fail closed with CannotDecryptData. */
    restart(&srv, WITH_B);
    c = login(&srv);
    OK(poll_check(c, 10, 10));
    assert_int_equal(poll_check(c, 0, 10), -SL_ERR_CANNOT_DECRYPT_DATA);
    assert_non_null(strstr(th_log(&srv), "cannot be decrypted"));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

/* Flips one ciphertext byte of the first message in the segment; with
 * fix_checksums the frame and batch checksums are made to match again, as
 * someone who knows the format but not the key could. */
static void tamper(const char *path, bool fix_checksums)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t rec[64 * 1024];
    ssize_t n = pread(fd, rec, sizeof(rec), 0);
    assert_true(n > (ssize_t)SL_BATCH_HEADER_SIZE);
    size_t len = (size_t)sl_load_u64(rec + SL_BATCH_OFF_LENGTH);
    assert_true(len <= (size_t)n);
    uint8_t *frame = rec + SL_BATCH_HEADER_SIZE;
    size_t frame_len = SL_FRAME_HEADER_SIZE + sl_load_u32(frame + SL_FRAME_OFF_PAYLOAD_LENGTH) +
                       sl_load_u32(frame + SL_FRAME_OFF_HEADERS_LENGTH);
    frame[SL_FRAME_HEADER_SIZE + 12 + 3] ^= 0x20; /* past the nonce: ciphertext */
    if (fix_checksums) {
        sl_store_u64(frame, sl_frame_checksum((sl_span_t){frame, frame_len}));
        sl_store_u64(rec + SL_BATCH_OFF_CHECKSUM, sl_batch_checksum((sl_span_t){rec, len}));
    }
    assert_int_equal(pwrite(fd, rec, len, 0), (ssize_t)len);
    close(fd);
}

static void test_flipped_byte_on_disk(void **state)
{
    (void)state;
    for (int fix = 0; fix < 2; fix++) {
        th_server_t srv;
        start(&srv, WITH_A, NULL);
        sl_client_t *c = login(&srv);
        OK(sl_client_create_stream(c, "s", NULL));
        OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, NULL, NULL));
        send_range(c, 0, 3);
        send_range(c, 3, 3);
        sl_client_close(c);
        th_stop(&srv, SIGTERM);
        scan(&srv);
        tamper(found_log, fix == 1);
        restart(&srv, WITH_A);
        c = login(&srv);
        sl_polled_messages_t out;
        int rc = sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                         sl_id_name("t"), 0, sl_poll_offset(0), 6, false, &out);
        if (fix) {
            /* Checksums agree: only the GCM tag can tell, and it does. */
            assert_int_equal(rc, -SL_ERR_CANNOT_DECRYPT_DATA);
            assert_non_null(strstr(th_log(&srv), "offset 0 cannot be decrypted"));
        } else {
            /* The stored checksum catches it first: nothing is served. */
            OK(rc);
            assert_int_equal(out.count, 0);
        }
        /* The second batch is intact and still served (with the checksum
         * failure the store stops its walk at the bad record instead). */
        if (fix)
            OK(poll_check(c, 3, 3));
        sl_client_close(c);
        th_stop(&srv, SIGTERM);
        th_cleanup(&srv);
    }
}

/* --- the plaintext tail ------------------------------------------------------------------- */

/* A stream and a topic whose every send is written and fdatasynced before
 * it is acknowledged, so the segment on disk holds it at once. */
static sl_client_t *setup_synced(th_server_t *srv)
{
    sl_client_t *c = login(srv);
    OK(sl_client_create_stream(c, "s", NULL));
    sl_topic_options_t o = {.set = SL_TOPIC_OPT_ENFORCE_FSYNC, .enforce_fsync = true};
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, &o, NULL));
    return c;
}

/* The number after `key` in the server's log (the last such line), or -1. */
static long long log_number(th_server_t *srv, const char *key)
{
    const char *log = th_log(srv), *p = NULL;
    for (const char *q = strstr(log, key); q; q = strstr(q + 1, key))
        p = q;
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* A poll of the tail takes the producer's frames from memory instead of
 * opening the sealed ones, but only while the stored frame still carries
 * the header, checksum, nonce and tag it was sealed with
 * (docs/security.md, "The plaintext tail"). A ciphertext byte flipped on
 * disk while the batch is in the tail:
 *   run 0, checksums left alone: the store's checksum check stops the poll
 *     before the record, as without the tail;
 *   run 1, checksums made to match again: the frame is no longer the one
 *     sealed, so it is opened, and fails closed, although its batch is in
 *     the tail;
 *   run 2, the same with the tail off.
 * The intact second batch comes from the tail (runs 0 and 1: 3 messages). */
static void test_tail_serves_only_what_was_sealed(void **state)
{
    (void)state;
    static const char *const configs[] = {WITH_A, WITH_A, WITH_A "tail_cache_max = 0\n"};
    for (int run = 0; run < 3; run++) {
        th_server_t srv;
        start(&srv, configs[run], NULL);
        sl_client_t *c = setup_synced(&srv);
        send_range(c, 0, 3);
        send_range(c, 3, 3);
        scan(&srv);
        tamper(found_log, run > 0);
        sl_polled_messages_t out;
        int rc = sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                                         sl_id_name("t"), 0, sl_poll_offset(0), 6, false, &out);
        if (run == 0) {
            OK(rc);
            assert_int_equal(out.count, 0);
        } else {
            assert_int_equal(rc, -SL_ERR_CANNOT_DECRYPT_DATA);
        }
        OK(poll_check(c, 3, 3));
        sl_client_close(c);
        th_stop(&srv, SIGTERM);
        assert_int_equal(log_number(&srv, "cache: "), run < 2 ? 3 : -1);
        if (run > 0)
            assert_non_null(strstr(th_log(&srv), "offset 0 cannot be decrypted"));
        th_cleanup(&srv);
    }
}

/* Under a long produce the tail stays within tail_cache_max: the oldest
 * batches go, and every message still polls back exactly, the old ones
 * opened from disk and the newest from the tail. */
static void test_tail_bounded(void **state)
{
    (void)state;
    enum { BATCHES = 400, PER = 32 };
    th_server_t srv;
    start(&srv, WITH_A "tail_cache_max = \"256 KiB\"\n", NULL);
    sl_client_t *c = login(&srv);
    OK(sl_client_create_stream(c, "s", NULL));
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, NULL, NULL));
    for (uint32_t b = 0; b < BATCHES; b++)
        send_range(c, b * PER, PER);
    for (uint32_t b = 0; b < BATCHES; b++)
        OK(poll_check(c, b * PER, PER));
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    long long hits = log_number(&srv, "cache: ");
    long long decrypted = log_number(&srv, "from it, ");
    long long evicted = log_number(&srv, " not kept, ");
    long long peak = log_number(&srv, "at most ");
    if (hits <= 0 || decrypted <= 0 || evicted <= 0 || peak <= 0 || peak > 256 * 1024)
        fail_msg("tail: %lld hits, %lld decrypted, %lld evicted, peak %lld bytes:\n%s", hits,
                 decrypted, evicted, peak, th_log(&srv));
    assert_int_equal(hits + decrypted, BATCHES * PER);
    th_cleanup(&srv);
}

/* Sealing adds 28 bytes a message: a batch that fits the frame limit as
 * sent but not once sealed is refused with 4036, and nothing is stored. */
static void test_sealed_size_limit(void **state)
{
    (void)state;
    th_server_t srv;
    start(&srv, "[message_bus]\nmax_message_size = \"1 MiB\"\n\n" WITH_A, NULL);
    sl_client_t *c = login(&srv);
    OK(sl_client_create_stream(c, "s", NULL));
    OK(sl_client_create_topic(c, sl_id_name("s"), "t", 1, NULL, NULL));
    enum { N = 1000, P = 1000 };
    static uint8_t payload[P];
    static sl_send_message_t m[N];
    memset(payload, 'z', sizeof(payload));
    for (uint32_t i = 0; i < N; i++)
        m[i] = (sl_send_message_t){.id = {i + 1, 1}, .payload = payload, .payload_len = P};
    /* 256 + 1000 x 1048 bytes of record: within 1 MiB as sent, 28 000 over once sealed. */
    assert_int_equal(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"),
                                             sl_partitioning_partition(0), m, N, NULL),
                     -SL_ERR_INVALID_MESSAGES_SIZE);
    OK(sl_client_send_messages(c, sl_id_name("s"), sl_id_name("t"), sl_partitioning_partition(0),
                               m, 900, NULL));
    sl_polled_messages_t out;
    OK(sl_client_poll_messages(c, sl_consumer_single(sl_id_num(1)), sl_id_name("s"),
                               sl_id_name("t"), 0, sl_poll_offset(0), N, false, &out));
    assert_int_equal(out.count, 900); /* the refused batch left nothing */
    assert_int_equal(out.messages[899].payload_len, P);
    assert_memory_equal(out.messages[899].payload, payload, P);
    sl_client_close(c);
    th_stop(&srv, SIGTERM);
    th_cleanup(&srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_restart_and_disk),
        cmocka_unit_test(test_nonces_across_restart),
        cmocka_unit_test(test_unencrypted_directory_refused),
        cmocka_unit_test(test_key_rotation),
        cmocka_unit_test(test_flipped_byte_on_disk),
        cmocka_unit_test(test_sealed_size_limit),
        cmocka_unit_test(test_tail_serves_only_what_was_sealed),
        cmocka_unit_test(test_tail_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
