/* At-rest encryption of messages (docs/security.md, messages.md 5): the
 * data directory's key check at start, sealing a validated SendMessages
 * record before it is journaled, and opening the records of a poll reply
 * in place before they are sent.
 *
 * A sealed frame keeps the frame layout: its body (payload then user
 * headers, pl + hl bytes) becomes one AES-256-GCM blob nonce ‖ ciphertext ‖
 * tag of pl + hl + 28 bytes; payload_length says pl + 28 and
 * user_headers_length stays hl, so frames still tile the record and the
 * frame and batch checksums are computed over the sealed bytes. The blob's
 * additional data is the message id and hl, so a blob moved to another
 * message, or lengths shifted between payload and headers, fail to open. */
#ifndef SL_SERVER_ENCRYPTION_H
#define SL_SERVER_ENCRYPTION_H

#include <stddef.h>
#include <stdint.h>

#include "auth/aead.h"
#include "base/assert.h"
#include "base/bytes.h"
#include "meta/entry.h"
#include "server/config.h"
#include "server/tail_cache.h"

/* The file in the data directory that says it holds encrypted data and
 * which key: a sealed constant only the right key opens. */
#define SL_ENCRYPTION_CHECK_FILE "encryption.check"

/* Bytes of the sealed form of a record of len bytes holding count frames. */
static inline size_t sl_encryption_sealed_len(size_t len, uint32_t count)
{
    return len + (size_t)count * SL_AEAD_OVERHEAD;
}

/* Seals a record that sl_batch_validate accepted into out
 * (sl_encryption_sealed_len bytes): the batch header with the new
 * batch_length and checksum, each frame sealed as above with its checksum
 * recomputed. record and out must not overlap. 0 or
 * -SL_ERR_CANNOT_ENCRYPT_DATA. */
int sl_encryption_seal_record(sl_aead_t *a, sl_span_t record, uint8_t *out) SL_WUR;
/* The same, also leaving in notes (count entries, may be NULL) what the
 * plaintext tail keeps of each frame (server/tail_cache.h). */
int sl_encryption_seal_record_noted(sl_aead_t *a, sl_span_t record, uint8_t *out,
                                    sl_sealed_note_t *notes) SL_WUR;

/* Opens, in place, a run of sealed records laid back to back (the records a
 * poll read into its reply): each frame's blob is verified and decrypted
 * where it lies, its frame moved down to close the gap the nonce and tag
 * leave, lengths and frame checksums rebuilt, then batch_length and
 * batch_checksum; the opened run is shorter (28 bytes a message), starts
 * at run, and *len_out gets its length. Frames tail (may be NULL) holds
 * unchanged are copied from it instead of opened (server/tail_cache.h).
 * Every length is checked against the run. 0, or
 * -SL_ERR_CANNOT_DECRYPT_DATA (a blob that does not verify: wrong key or
 * tampered bytes; a frame too short to be sealed; a broken layout) with
 * *bad_offset the offset of the message that failed. On failure run is
 * garbage and must not be sent (the failed message's plaintext is zeroed). */
int sl_encryption_open_run_cached(sl_aead_t *a, sl_tail_cache_t *tail, uint8_t *run, size_t len,
                                  size_t *len_out, uint64_t *bad_offset) SL_WUR;
/* The same without a tail. */
int sl_encryption_open_run(sl_aead_t *a, uint8_t *run, size_t len, size_t *len_out,
                           uint64_t *bad_offset) SL_WUR;

/* Appends the sealed form of plain (plain.len + SL_AEAD_OVERHEAD bytes) to
 * out. 0, -SL_ERR_CANNOT_ENCRYPT_DATA, or -SL_ERR_ERROR when out cannot grow. */
int sl_encryption_seal_blob(sl_aead_t *a, sl_span_t aad, sl_span_t plain, sl_buf_t *out) SL_WUR;
/* Appends the plaintext of the sealed blob to out (nothing when it does not
 * verify). 0, -SL_ERR_CANNOT_DECRYPT_DATA, or -SL_ERR_ERROR. */
int sl_encryption_open_blob(sl_aead_t *a, sl_span_t aad, sl_span_t sealed, sl_buf_t *out) SL_WUR;

/* The metadata's at-rest form (docs/security.md): a journaled entry's body
 * is one blob whose additional data binds it to its op and operation; the
 * snapshot's state bytes are one blob. Shapes of sl_meta_machine_t's seal
 * and open, ctx the aead. */
int sl_encryption_seal_entry(void *aead, const sl_meta_entry_t *e, sl_buf_t *out);
int sl_encryption_open_entry(void *aead, const sl_meta_entry_t *e, sl_buf_t *out);
#define SL_ENCRYPTION_SNAPSHOT_AAD "sluice metadata snapshot v1"

/* At start, after the data directory is locked and before anything in it
 * is read: matches the directory against the settings (docs/security.md).
 *   enabled, check file opens with key: ready;
 *   enabled, it opens only with previous_key: a rotation; the file is
 *     rewritten for key (logged);
 *   enabled, it opens with neither: refused (wrong key);
 *   enabled, no check file, directory empty: the file is written;
 *   enabled, no check file, directory holds data: refused (unencrypted
 *     data cannot be turned encrypted in place);
 *   disabled, check file present: refused (the data needs the key);
 *   disabled, no check file: nothing is done, *out stays NULL.
 * On success *out is the loop's context (NULL when disabled) and *rotated
 * says whether the check file opened only with previous_key (the caller then
 * re-seals the metadata with the new key). 0 or a negative error with err
 * saying what to do. */
int sl_encryption_open_datadir(const sl_config_t *cfg, sl_aead_t **out, bool *rotated, char *err,
                               size_t err_len) SL_WUR;

/* A context for cfg's keys (another thread's own), or NULL when disabled.
 * 0 or a negative error. */
int sl_encryption_context(const sl_config_t *cfg, sl_aead_t **out) SL_WUR;

#endif
