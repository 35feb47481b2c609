/* Fuzz target: recovery of metadata/journal.wal (src/meta/journal.c), the file a boot replays
 * after a crash, torn or not, with its preallocated reserve (issue 9). The input is
 * [mode u8][journal bytes]. With mode bit 0 set the target first reseals every entry it can
 * walk (body checksum, then the header seal; with bit 1 also each parent link), so mutations
 * get past the checksums and reach the field and chain checks; otherwise the bytes go to disk
 * as given.
 *
 * What must hold: open succeeds on any file (a bad entry and all after it are cut, never
 * refused); the kept bytes plus the cut bytes are the input; the file holds the kept bytes,
 * unchanged; a replay visits exactly the kept entries with ops first..last in order; a second open
 * finds the same entries and nothing to cut; and an entry appended after the recovery is
 * there at the next open. The file lives in a temporary directory of this process, on /dev/shm
 * where there is one (SLUICE_FUZZ_TMPDIR chooses another). */
#include <sluice/error.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/assert.h"
#include "base/bytes.h"
#include "base/log.h"
#include "meta/entry.h"
#include "meta/journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define INPUT_MAX (1u << 20)

static char dir[256];
static char path[320];

static void remove_dir(void)
{
    unlink(path);
    rmdir(dir);
}

static void setup_once(void)
{
    if (dir[0])
        return;
    sl_log_set_level(SL_LOG_ERROR);
    /* Every input syncs the file and its directory a few times: on tmpfs that costs nothing. */
    const char *tmp = getenv("SLUICE_FUZZ_TMPDIR");
    struct stat st;
    if (!tmp || !*tmp)
        tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : "/tmp";
    int n = snprintf(dir, sizeof(dir), "%s/sluice-fuzz-journal.XXXXXX", tmp);
    sl_assert(n > 0 && (size_t)n < sizeof(dir));
    sl_assert(mkdtemp(dir) != NULL);
    n = snprintf(path, sizeof(path), "%s/%s", dir, SL_META_JOURNAL_FILE);
    sl_assert(n > 0 && (size_t)n < sizeof(path));
    atexit(remove_dir);
}

/* Recomputes the body checksum and the seal of each entry whose declared size fits what is
 * left, walking by the size field; stops at the first that does not. With relink, each entry's
 * parent becomes the seal of the one before it, as appends write it. */
static void reseal(uint8_t *p, size_t len, bool relink)
{
    size_t at = 0;
    sl_u128_t prev = {0, 0};
    for (uint32_t i = 0; i < INPUT_MAX / SL_META_HEADER_SIZE && len - at >= SL_META_HEADER_SIZE;
         i++) {
        uint8_t *h = p + at;
        uint32_t entry = sl_load_u32(h + SL_META_AT_SIZE);
        if (entry < SL_META_HEADER_SIZE || entry > len - at)
            return;
        if (relink && i > 0)
            sl_store_u128(h + SL_META_AT_PARENT, prev);
        sl_span_t body = sl_span(h + SL_META_HEADER_SIZE, entry - SL_META_HEADER_SIZE);
        sl_store_u128(h + SL_META_AT_CHECKSUM_BODY, sl_meta_checksum(body));
        prev = sl_meta_checksum(
            sl_span(h + SL_META_AT_CHECKSUM_BODY, SL_META_HEADER_SIZE - SL_META_AT_CHECKSUM_BODY));
        sl_store_u128(h + SL_META_AT_CHECKSUM, prev);
        at += entry;
    }
}

/* The file's bytes are the first n of want. */
static void expect_file(const uint8_t *want, size_t n)
{
    FILE *f = fopen(path, "rb");
    sl_assert(f != NULL);
    uint8_t *got = malloc(n + 1);
    sl_assert(got != NULL);
    size_t read = fread(got, 1, n + 1, f);
    fclose(f);
    sl_assert(read == n && (n == 0 || memcmp(got, want, n) == 0));
    free(got);
}

static void write_file(const uint8_t *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    sl_assert(f != NULL);
    sl_assert(len == 0 || fwrite(p, 1, len, f) == len);
    sl_assert(fclose(f) == 0);
}

typedef struct walk {
    uint64_t next_op;
    uint64_t count;
} walk_t;

static int visit(void *ctx, const sl_meta_entry_t *e)
{
    walk_t *w = ctx;
    sl_assert(w->count == 0 || e->op == w->next_op);
    w->next_op = e->op + 1;
    w->count++;
    return 0;
}

static sl_meta_journal_t *open_checked(sl_meta_journal_info_t *info)
{
    sl_meta_journal_t *j = NULL;
    char err[512];
    int rc = sl_meta_journal_open(&j, dir, info, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "journal open refused: %d: %s\n", rc, err);
        sl_assert(rc == 0);
    }
    walk_t w = {0};
    sl_assert(sl_meta_journal_replay(j, 0, visit, &w) == 0);
    sl_assert(w.count == info->entries);
    sl_assert(info->entries == 0 || (info->first_op >= 1 && w.next_op == info->last_op + 1 &&
                                     info->last_op - info->first_op + 1 == info->entries));
    sl_assert(sl_meta_journal_size(j) == info->size);
    struct stat st;
    sl_assert(stat(path, &st) == 0 && (uint64_t)st.st_size == info->size);
    return j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > INPUT_MAX)
        return 0;
    setup_once();
    size_t len = size - 1;
    uint8_t *file = malloc(len ? len : 1);
    sl_assert(file != NULL);
    memcpy(file, data + 1, len);
    if (data[0] & 1)
        reseal(file, len, data[0] & 2);
    write_file(file, len);

    sl_meta_journal_info_t info;
    sl_meta_journal_t *j = open_checked(&info);
    sl_assert(info.size + info.torn_bytes == len);
    sl_assert((info.torn_bytes == 0) == (info.torn_reason == NULL));
    expect_file(file, (size_t)info.size);
    sl_meta_journal_close(j);

    sl_meta_journal_info_t again;
    j = open_checked(&again);
    sl_assert(again.torn_bytes == 0 && again.entries == info.entries && again.size == info.size &&
              again.last_op == info.last_op);

    /* The recovered journal takes the next entry, unless it ends at the last op a journal
     * holds (2^64 - 2): then the append is refused and the journal stays as it was. */
    uint8_t body[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    sl_meta_entry_t e = {
        .op = info.entries ? info.last_op + 1 : 1,
        .timestamp = info.last_timestamp + 1,
        .request = 1,
        .operation = 128,
        .body = sl_span(body, sizeof(body)),
    };
    if (e.op == UINT64_MAX) {
        sl_assert(sl_meta_journal_append(j, &e, SL_META_RESERVE_KEEP) ==
                  -SL_ERR_CANNOT_WRITE_TO_FILE);
        sl_meta_journal_close(j);
        j = open_checked(&again);
        sl_assert(again.torn_bytes == 0 && again.entries == info.entries &&
                  again.last_op == info.last_op);
        sl_meta_journal_close(j);
        free(file);
        return 0;
    }
    sl_assert(sl_meta_journal_append(j, &e, SL_META_RESERVE_KEEP) == 0);
    sl_meta_journal_close(j);
    j = open_checked(&again);
    sl_assert(again.torn_bytes == 0 && again.entries == info.entries + 1 && again.last_op == e.op);
    sl_meta_journal_close(j);
    free(file);
    return 0;
}
