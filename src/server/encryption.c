/* At-rest encryption of message records and the data directory's key
 * check (server/encryption.h). */
#include "server/encryption.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/log.h"
#include "base/xxh3.h"
#include "server/datadir.h"
#include "wire/batch.h"

/* --- records ---------------------------------------------------------------------------- */

/* The additional data bound to a message's blob: its id and the length of
 * its user headers. */
static sl_span_t frame_aad(uint8_t aad[20], const uint8_t *frame_header)
{
    memcpy(aad, frame_header + SL_FRAME_OFF_ID, 16);
    memcpy(aad + 16, frame_header + SL_FRAME_OFF_HEADERS_LENGTH, 4);
    return (sl_span_t){aad, 20};
}

static void finish_frame(uint8_t *frame, size_t len)
{
    sl_store_u64(frame + SL_FRAME_OFF_CHECKSUM, sl_frame_checksum((sl_span_t){frame, len}));
}

static void finish_record(uint8_t *record, size_t len)
{
    sl_store_u64(record + SL_BATCH_OFF_LENGTH, len);
    sl_store_u64(record + SL_BATCH_OFF_CHECKSUM, sl_batch_checksum((sl_span_t){record, len}));
}

int sl_encryption_seal_record(sl_aead_t *a, sl_span_t record, uint8_t *out)
{
    return sl_encryption_seal_record_noted(a, record, out, NULL);
}

int sl_encryption_seal_record_noted(sl_aead_t *a, sl_span_t record, uint8_t *out,
                                    sl_sealed_note_t *notes)
{
    uint32_t count = sl_load_u32(record.ptr + SL_BATCH_OFF_COUNT);
    memcpy(out, record.ptr, SL_BATCH_HEADER_SIZE);
    size_t in = SL_BATCH_HEADER_SIZE, at = SL_BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *f = record.ptr + in;
        uint32_t payload = sl_load_u32(f + SL_FRAME_OFF_PAYLOAD_LENGTH);
        uint32_t headers = sl_load_u32(f + SL_FRAME_OFF_HEADERS_LENGTH);
        size_t body = (size_t)payload + headers;
        /* sl_batch_validate made the frames tile the record. */
        sl_assert(in + SL_FRAME_HEADER_SIZE + body <= record.len);
        sl_assert(payload <= UINT32_MAX - SL_AEAD_OVERHEAD);
        uint8_t *o = out + at, aad[20];
        memcpy(o, f, SL_FRAME_HEADER_SIZE);
        sl_store_u32(o + SL_FRAME_OFF_PAYLOAD_LENGTH, payload + SL_AEAD_OVERHEAD);
        int rc = sl_aead_seal(a, frame_aad(aad, f), f + SL_FRAME_HEADER_SIZE, body,
                              o + SL_FRAME_HEADER_SIZE);
        if (rc != 0)
            return rc;
        size_t n = SL_FRAME_HEADER_SIZE + body + SL_AEAD_OVERHEAD;
        finish_frame(o, n);
        if (notes) /* records are far below 4 GiB (the frame limit) */
            notes[i] = (sl_sealed_note_t){(uint32_t)in, (uint32_t)at,
                                          sl_load_u64(o + SL_FRAME_OFF_CHECKSUM)};
        in += SL_FRAME_HEADER_SIZE + body;
        at += n;
    }
    sl_assert(at == sl_encryption_sealed_len(record.len, count));
    finish_record(out, at);
    return 0;
}

/* Opens, in place, the frames of the sealed record at run + r (len bytes,
 * layout not trusted) to run + w (w <= r): each blob is verified and
 * decrypted where it lies, then its frame (header, then plaintext) is moved
 * down to the write position while it is still in the cache, and its frame
 * checksum taken there (or, when the tail holds the frame unchanged, the
 * producer's frame is copied there). Frames only shrink (28 bytes each), so
 * the write position never passes the bytes still to be read. */
static int open_record(sl_aead_t *a, sl_tail_cache_t *tail, uint8_t *run, size_t r, size_t len,
                       size_t w, size_t *opened_len, uint64_t *bad_offset)
{
    uint8_t record[SL_BATCH_HEADER_SIZE];
    memcpy(record, run + r, SL_BATCH_HEADER_SIZE);
    uint64_t base_offset = sl_load_u64(record + SL_BATCH_OFF_BASE_OFFSET);
    uint32_t count = sl_load_u32(record + SL_BATCH_OFF_COUNT);
    const size_t end = r + len;
    size_t in = r + SL_BATCH_HEADER_SIZE, at = w + SL_BATCH_HEADER_SIZE;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t aad[20], fh[SL_FRAME_HEADER_SIZE];
        *bad_offset = base_offset + i;
        if (end - in < SL_FRAME_HEADER_SIZE)
            return -SL_ERR_CANNOT_DECRYPT_DATA;
        memcpy(fh, run + in, SL_FRAME_HEADER_SIZE); /* the move below may overwrite it */
        *bad_offset = base_offset + sl_load_u32(fh + SL_FRAME_OFF_OFFSET_DELTA);
        uint32_t sealed = sl_load_u32(fh + SL_FRAME_OFF_PAYLOAD_LENGTH);
        uint32_t headers = sl_load_u32(fh + SL_FRAME_OFF_HEADERS_LENGTH);
        size_t blob = (size_t)sealed + headers;
        if (sealed < SL_AEAD_OVERHEAD || blob > end - in - SL_FRAME_HEADER_SIZE ||
            sl_load_u64(fh + SL_FRAME_OFF_RESERVED) != 0)
            return -SL_ERR_CANNOT_DECRYPT_DATA;
        size_t plain = blob - SL_AEAD_OVERHEAD, frame = SL_FRAME_HEADER_SIZE + plain;
        uint8_t *o = run + at;
        sl_span_t cached = sl_tail_cache_find(tail, run + in, SL_FRAME_HEADER_SIZE + blob);
        if (cached.len > 0 && cached.len <= SL_FRAME_HEADER_SIZE + blob) {
            /* The producer's frame, checksum and all: what the open gives.
             * It lies in the cache, apart from the run. */
            memcpy(o, cached.ptr, cached.len);
            in += SL_FRAME_HEADER_SIZE + blob;
            at += cached.len;
            continue;
        }
        uint8_t *body = run + in + SL_FRAME_HEADER_SIZE;
        int rc = sl_aead_open(a, frame_aad(aad, fh), body, blob, NULL);
        if (rc != 0)
            return rc;
        /* The plaintext sits after the blob's nonce; the frame goes to o. */
        memmove(o + SL_FRAME_HEADER_SIZE, body + SL_AEAD_NONCE_SIZE, plain);
        memcpy(o, fh, SL_FRAME_HEADER_SIZE);
        sl_store_u32(o + SL_FRAME_OFF_PAYLOAD_LENGTH, sealed - SL_AEAD_OVERHEAD);
        finish_frame(o, frame);
        in += SL_FRAME_HEADER_SIZE + blob;
        at += frame;
    }
    if (in != end)
        return -SL_ERR_CANNOT_DECRYPT_DATA;
    memcpy(run + w, record, SL_BATCH_HEADER_SIZE);
    finish_record(run + w, at - w);
    *opened_len = at - w;
    return 0;
}

int sl_encryption_open_run_cached(sl_aead_t *a, sl_tail_cache_t *tail, uint8_t *run, size_t len,
                                  size_t *len_out, uint64_t *bad_offset)
{
    size_t r = 0, w = 0;
    *bad_offset = 0;
    while (r < len) {
        if (len - r < SL_BATCH_HEADER_SIZE)
            return -SL_ERR_CANNOT_DECRYPT_DATA;
        uint64_t record_len = sl_load_u64(run + r + SL_BATCH_OFF_LENGTH);
        *bad_offset = sl_load_u64(run + r + SL_BATCH_OFF_BASE_OFFSET);
        if (record_len < SL_BATCH_HEADER_SIZE || record_len > len - r)
            return -SL_ERR_CANNOT_DECRYPT_DATA;
        size_t opened;
        int rc = open_record(a, tail, run, r, (size_t)record_len, w, &opened, bad_offset);
        if (rc != 0)
            return rc;
        r += (size_t)record_len;
        w += opened;
    }
    *len_out = w;
    return 0;
}

int sl_encryption_open_run(sl_aead_t *a, uint8_t *run, size_t len, size_t *len_out,
                           uint64_t *bad_offset)
{
    return sl_encryption_open_run_cached(a, NULL, run, len, len_out, bad_offset);
}

/* --- blobs and metadata ------------------------------------------------------------------ */

int sl_encryption_seal_blob(sl_aead_t *a, sl_span_t aad, sl_span_t plain, sl_buf_t *out)
{
    if (!sl_buf_reserve(out, plain.len + SL_AEAD_OVERHEAD))
        return -SL_ERR_ERROR;
    int rc = sl_aead_seal(a, aad, plain.ptr, plain.len, out->data + out->len);
    if (rc == 0)
        out->len += plain.len + SL_AEAD_OVERHEAD;
    return rc;
}

int sl_encryption_open_blob(sl_aead_t *a, sl_span_t aad, sl_span_t sealed, sl_buf_t *out)
{
    if (sealed.len < SL_AEAD_OVERHEAD)
        return -SL_ERR_CANNOT_DECRYPT_DATA;
    /* Opened straight into out: the sealed bytes are borrowed (a file read, a journal entry). */
    size_t plain = sealed.len - SL_AEAD_OVERHEAD;
    if (!sl_buf_reserve(out, plain))
        return -SL_ERR_ERROR;
    /* An empty plaintext into an empty buffer: out->data may still be NULL. */
    uint8_t none;
    uint8_t *to = plain > 0 ? out->data + out->len : &none;
    int rc = sl_aead_open_to(a, aad, sealed.ptr, sealed.len, to, NULL);
    if (rc == 0)
        out->len += plain;
    return rc;
}

static sl_span_t entry_aad(uint8_t aad[32], const sl_meta_entry_t *e)
{
    static const char tag[] = "sluice meta entry";
    memcpy(aad, tag, sizeof(tag) - 1);
    sl_store_u64(aad + 17, e->op);
    aad[25] = e->operation;
    return (sl_span_t){aad, 26};
}

int sl_encryption_seal_entry(void *aead, const sl_meta_entry_t *e, sl_buf_t *out)
{
    uint8_t aad[32];
    return sl_encryption_seal_blob(aead, entry_aad(aad, e), e->body, out);
}

int sl_encryption_open_entry(void *aead, const sl_meta_entry_t *e, sl_buf_t *out)
{
    uint8_t aad[32];
    return sl_encryption_open_blob(aead, entry_aad(aad, e), e->body, out);
}

/* --- the data directory's key check ---------------------------------------------------- */

#define CHECK_MAGIC "sluice-encryption-check v1\n"
/* What the check file seals: nothing secret, the tag is what matters. */
static const uint8_t check_plain[32] = "sluice at-rest encryption check";

static int context_for(const sl_config_t *cfg, sl_aead_t **out)
{
    uint8_t key[SL_AEAD_KEY_SIZE], previous[SL_AEAD_KEY_SIZE];
    const char *prev_text = cfg->system.encryption.previous_key;
    /* sl_config_validate checked both: a failure here is a bug. */
    sl_assert(sl_aead_key_decode(cfg->system.encryption.key, key));
    sl_assert(prev_text[0] == '\0' || sl_aead_key_decode(prev_text, previous));
    int rc = sl_aead_create(key, prev_text[0] ? previous : NULL, out);
    explicit_bzero(key, sizeof(key));
    explicit_bzero(previous, sizeof(previous));
    return rc;
}

int sl_encryption_context(const sl_config_t *cfg, sl_aead_t **out)
{
    *out = NULL;
    return cfg->system.encryption.enabled ? context_for(cfg, out) : 0;
}

/* True when dir holds anything but the lock file and the check file. */
static bool dir_has_data(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return true; /* cannot tell: treat as holding data, the safe answer */
    bool found = false;
    for (struct dirent *e = readdir(d); e && !found; e = readdir(d))
        found = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                strcmp(e->d_name, SL_DATADIR_LOCK_FILE) != 0 &&
                strcmp(e->d_name, SL_ENCRYPTION_CHECK_FILE) != 0;
    closedir(d);
    return found;
}

static int write_check(const char *dir, sl_aead_t *a, char *err, size_t err_len)
{
    uint8_t sealed[sizeof(check_plain) + SL_AEAD_OVERHEAD];
    char text[256], path[PATH_MAX];
    sl_buf_t b;
    sl_buf_init_fixed(&b, text, sizeof(text));
    int rc = sl_aead_seal(a, sl_span_str(CHECK_MAGIC), check_plain, sizeof(check_plain), sealed);
    if (rc == 0) {
        sl_put_bytes(&b, CHECK_MAGIC, strlen(CHECK_MAGIC));
        sl_base64_encode(&b, (sl_span_t){sealed, sizeof(sealed)}, false);
        sl_put_bytes(&b, "\n", 2); /* the terminator too */
        rc = sl_datadir_write_private(dir, SL_ENCRYPTION_CHECK_FILE, text, path);
    }
    if (rc != 0)
        snprintf(err, err_len, "cannot write %s/%s: %s", dir, SL_ENCRYPTION_CHECK_FILE,
                 rc == -SL_ERR_CANNOT_ENCRYPT_DATA ? "encryption failed" : strerror(-rc));
    return rc != 0 ? -SL_ERR_CANNOT_WRITE_TO_FILE : 0;
}

/* Reads the check file: 1 when present (sealed filled), 0 when absent, or
 * a negative error. */
static int read_check(const char *dir, uint8_t sealed[sizeof(check_plain) + SL_AEAD_OVERHEAD],
                      char *err, size_t err_len)
{
    char path[PATH_MAX], text[256];
    snprintf(path, sizeof(path), "%s/%s", dir, SL_ENCRYPTION_CHECK_FILE);
    FILE *f = fopen(path, "rb");
    if (!f && errno == ENOENT)
        return 0;
    if (!f) {
        snprintf(err, err_len, "cannot open %s: %s", path, strerror(errno));
        return -SL_ERR_CANNOT_READ_FILE;
    }
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    size_t magic = strlen(CHECK_MAGIC);
    uint8_t raw[128];
    sl_buf_t b;
    sl_buf_init_fixed(&b, raw, sizeof(raw));
    char *end = strchr(text + (n >= magic ? magic : 0), '\n');
    if (n < magic || memcmp(text, CHECK_MAGIC, magic) != 0 || !end ||
        !sl_base64_decode(&b, (sl_span_t){(uint8_t *)text + magic, (size_t)(end - text) - magic},
                          false) ||
        b.len != sizeof(check_plain) + SL_AEAD_OVERHEAD) {
        snprintf(err, err_len, "%s is not an encryption check file this sluiced can read", path);
        return -SL_ERR_STATE_FILE_CORRUPTED;
    }
    memcpy(sealed, raw, b.len);
    return 1;
}

int sl_encryption_open_datadir(const sl_config_t *cfg, sl_aead_t **out, bool *rotated, char *err,
                               size_t err_len)
{
    const char *dir = cfg->system.path;
    uint8_t sealed[sizeof(check_plain) + SL_AEAD_OVERHEAD];
    *out = NULL;
    *rotated = false;
    int present = read_check(dir, sealed, err, err_len);
    if (present < 0)
        return present;
    if (!cfg->system.encryption.enabled) {
        if (present == 0)
            return 0;
        snprintf(err, err_len,
                 "data directory %s holds encrypted data (%s), but system.encryption.enabled is "
                 "false: start with encryption enabled and its key (docs/security.md)",
                 dir, SL_ENCRYPTION_CHECK_FILE);
        return -SL_ERR_INVALID_ENCRYPTION_KEY;
    }
    sl_aead_t *a;
    int rc = context_for(cfg, &a);
    if (rc != 0) {
        snprintf(err, err_len, "cannot set up AES-256-GCM: %s", sl_strerror(rc));
        return rc;
    }
    if (present == 0 && dir_has_data(dir)) {
        snprintf(err, err_len,
                 "data directory %s holds data written without encryption; it cannot be "
                 "encrypted in place: start with system.encryption.enabled = false, or move the "
                 "data to a new directory (docs/security.md, \"Turning encryption on\")",
                 dir);
        sl_aead_destroy(a);
        return -SL_ERR_INVALID_ENCRYPTION_KEY;
    }
    sl_aead_key_used_t used = SL_AEAD_KEY_CURRENT;
    if (present && sl_aead_open(a, sl_span_str(CHECK_MAGIC), sealed, sizeof(sealed), &used) != 0) {
        snprintf(err, err_len,
                 "system.encryption.key %sdoes not open data directory %s: it was written with "
                 "another key (%s); start with the key it was written with (docs/security.md)",
                 cfg->system.encryption.previous_key[0] ? "(nor previous_key) " : "", dir,
                 SL_ENCRYPTION_CHECK_FILE);
        sl_aead_destroy(a);
        return -SL_ERR_INVALID_ENCRYPTION_KEY;
    }
    if (present == 0 || used == SL_AEAD_KEY_PREVIOUS) {
        rc = write_check(dir, a, err, err_len);
        if (rc != 0) {
            sl_aead_destroy(a);
            return rc;
        }
        *rotated = present != 0;
        if (present)
            sl_log_warn("encryption: key rotation: %s now names the new key; keep previous_key "
                        "until every message written before the rotation has expired",
                        SL_ENCRYPTION_CHECK_FILE);
    }
    sl_log_info("encryption: on (AES-256-GCM through %s)%s", sl_aead_engine_name(a),
                cfg->system.encryption.previous_key[0] ? ", previous_key accepted for reads" : "");
    *out = a;
    return 0;
}
