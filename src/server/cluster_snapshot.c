/* The machine snapshot of a partition group's checkpoint and its DeleteSegments record
 * (server/cluster_snapshot.h). */
#include "server/cluster_snapshot.h"

#include <inttypes.h>
#include <sluice/error.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int corrupt(char *err, size_t err_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int corrupt(char *err, size_t err_len, const char *fmt, ...)
{
    if (err_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_len, fmt, ap);
        va_end(ap);
    }
    return -SL_ERR_STATE_FILE_CORRUPTED;
}

void sl_psnapshot_put_deletes(sl_buf_t *out, const sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN])
{
    uint8_t used = 0;
    for (uint32_t i = 0; i < SL_CLUSTER_DELETES_SEEN; i++)
        used += !sl_u128_is_zero(seen[i].client);
    sl_put_u8(out, SL_PSNAPSHOT_DELETES_VERSION);
    sl_put_u8(out, used);
    for (uint32_t i = 0; i < SL_CLUSTER_DELETES_SEEN; i++) {
        const sl_delete_seen_t *d = &seen[i];
        if (sl_u128_is_zero(d->client))
            continue;
        /* An applied op is never op 0: the decoder refuses one, so the encoder never writes it. */
        sl_assert(d->op != 0);
        sl_put_u128(out, d->client);
        sl_put_u128(out, d->request_checksum);
        sl_put_u64(out, d->request);
        sl_put_u64(out, d->below);
        sl_put_u64(out, d->generation);
        sl_put_u64(out, d->op);
    }
}

int sl_psnapshot_deletes_decode(sl_span_t bytes, sl_delete_seen_t seen[SL_CLUSTER_DELETES_SEEN],
                                char *err, size_t err_len)
{
    memset(seen, 0, SL_CLUSTER_DELETES_SEEN * sizeof(*seen));
    sl_reader_t r = sl_reader(bytes);
    uint8_t version = 0, count = 0;
    if (!sl_read_u8(&r, &version) || !sl_read_u8(&r, &count))
        return corrupt(err, err_len, "DeleteSegments record of %zu bytes: shorter than its head",
                       bytes.len);
    if (version != SL_PSNAPSHOT_DELETES_VERSION)
        return corrupt(err, err_len, "DeleteSegments record of version %u (this server reads %u)",
                       version, SL_PSNAPSHOT_DELETES_VERSION);
    if (count > SL_CLUSTER_DELETES_SEEN)
        return corrupt(err, err_len, "DeleteSegments record of %u entries (at most %u)", count,
                       SL_CLUSTER_DELETES_SEEN);
    if (sl_reader_left(&r) != (size_t)count * SL_PSNAPSHOT_DELETE_SIZE)
        return corrupt(err, err_len,
                       "DeleteSegments record of %u entries in %zu bytes (expected %u)", count,
                       bytes.len, 2u + count * SL_PSNAPSHOT_DELETE_SIZE);
    for (uint32_t i = 0; i < count; i++) {
        sl_delete_seen_t *d = &seen[i];
        sl_read_u128(&r, &d->client);
        sl_read_u128(&r, &d->request_checksum);
        sl_read_u64(&r, &d->request);
        sl_read_u64(&r, &d->below);
        sl_read_u64(&r, &d->generation);
        sl_read_u64(&r, &d->op);
        if (sl_u128_is_zero(d->client) || d->op == 0) {
            const char *what = d->op == 0 ? "op" : "client";
            memset(seen, 0, SL_CLUSTER_DELETES_SEEN * sizeof(*seen));
            return corrupt(err, err_len, "DeleteSegments record: entry %u has no %s", i, what);
        }
        for (uint32_t k = 0; k < i; k++) {
            if (sl_u128_eq(seen[k].client, d->client)) {
                memset(seen, 0, SL_CLUSTER_DELETES_SEEN * sizeof(*seen));
                return corrupt(err, err_len,
                               "DeleteSegments record: entries %u and %u are of "
                               "the same client",
                               k, i);
            }
        }
    }
    sl_assert(sl_reader_done(&r));
    return 0;
}

int sl_psnapshot_decode(sl_span_t snap, sl_psnapshot_t *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof(*out));
    sl_reader_t r = sl_reader(snap);
    if (!sl_read_u64(&r, &out->next) || !sl_read_u32(&r, &out->offsets_count))
        return corrupt(err, err_len, "snapshot of %zu bytes: shorter than its head", snap.len);
    if (sl_reader_left(&r) / SL_PSNAPSHOT_OFFSET_SIZE < out->offsets_count)
        return corrupt(err, err_len, "snapshot of %zu bytes names %" PRIu32 " consumer offsets",
                       snap.len, out->offsets_count);
    out->offsets = sl_read_take(&r, (size_t)out->offsets_count * SL_PSNAPSHOT_OFFSET_SIZE);
    if (sl_reader_left(&r) == 0)
        return 0; /* version 0 */
    if (!sl_read_u64(&r, &out->log_gen))
        return corrupt(err, err_len, "snapshot of %zu bytes: %zu bytes after the offsets", snap.len,
                       sl_reader_left(&r));
    out->has_log_gen = true;
    if (sl_reader_left(&r) == 0)
        return 0; /* version 1 */
    int rc = sl_psnapshot_deletes_decode(sl_read_rest(&r), out->deletes, err, err_len);
    if (rc != 0)
        return rc;
    out->has_deletes = true;
    return 0;
}
