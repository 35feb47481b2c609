/* Encoders and decoders of the admitted body forms (meta/admit.h). Every
 * decoder runs on journaled bytes the server produced with the matching
 * encoder, but still checks every length: a damaged journal must fail, not
 * read out of bounds. */
#include "meta/admit.h"

#include <sluice/error.h>

#include "wire/codec.h"

static int decode_end_exact(const sl_reader_t *r)
{
    return sl_reader_done(r) ? 0 : -SL_ERR_INVALID_COMMAND;
}

/* --- 141 CreateUser ----------------------------------------------------------- */

int sl_meta_admit_create_user_encode(sl_buf_t *b, const sl_create_user_request_t *req,
                                     sl_span_t phc_hash)
{
    if (phc_hash.len == 0)
        return -SL_ERR_INVALID_COMMAND;
    sl_create_user_request_t admitted = *req;
    admitted.password = phc_hash;
    return sl_create_user_request_encode(b, &admitted);
}

/* --- 144 ChangePassword ------------------------------------------------------- */

int sl_meta_admit_change_password_encode(sl_buf_t *b, const sl_meta_admit_change_password_t *in)
{
    bool ok = sl_ident_encode(b, &in->user_id);
    sl_put_u8(b, in->verified ? 1 : 0);
    ok = ok && sl_str8_encode(b, in->new_hash);
    return sl_encode_end(b, ok);
}

int sl_meta_admit_change_password_decode(sl_span_t body, sl_meta_admit_change_password_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_meta_admit_change_password_t q = {0};
    uint8_t verified = 0;
    sl_ident_decode(&r, &q.user_id);
    sl_read_u8(&r, &verified);
    sl_str8_decode(&r, &q.new_hash);
    if (verified > 1)
        sl_reader_fail(&r);
    q.verified = verified == 1;
    int rc = decode_end_exact(&r);
    if (rc == 0)
        *out = q;
    return rc;
}

/* --- 146 CreatePersonalAccessToken -------------------------------------------- */

bool sl_meta_digest_valid(sl_span_t digest)
{
    if (digest.len != SL_META_TOKEN_DIGEST_LEN)
        return false;
    for (size_t i = 0; i < digest.len; i++) {
        uint8_t c = digest.ptr[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

int sl_meta_admit_create_pat_encode(sl_buf_t *b, const sl_meta_admit_create_pat_t *in)
{
    bool ok = sl_meta_digest_valid(in->digest) && sl_name_encode(b, in->name);
    if (ok) {
        sl_put_u64(b, in->expiry_us);
        ok = sl_str8_encode(b, in->digest);
    }
    return sl_encode_end(b, ok);
}

int sl_meta_admit_create_pat_decode(sl_span_t body, sl_meta_admit_create_pat_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_meta_admit_create_pat_t q = {0};
    sl_name_decode(&r, &q.name);
    sl_read_u64(&r, &q.expiry_us);
    sl_str8_decode(&r, &q.digest);
    if (sl_reader_ok(&r) && !sl_meta_digest_valid(q.digest))
        sl_reader_fail(&r);
    int rc = decode_end_exact(&r);
    if (rc == 0)
        *out = q;
    return rc;
}

/* --- 1 Register ---------------------------------------------------------------- */

int sl_meta_admit_register_encode(sl_buf_t *b, const sl_meta_admit_register_t *in)
{
    sl_put_u32(b, in->user_id);
    sl_put_u32(b, in->version.protocol_version);
    bool ok = sl_name_encode(b, in->version.sdk_name) && sl_name_encode(b, in->version.sdk_version);
    return sl_encode_end(b, ok);
}

int sl_meta_admit_register_decode(sl_span_t body, sl_meta_admit_register_t *out)
{
    sl_reader_t r = sl_reader(body);
    sl_meta_admit_register_t q = {0};
    sl_read_u32(&r, &q.user_id);
    sl_read_u32(&r, &q.version.protocol_version);
    sl_name_decode(&r, &q.version.sdk_name);
    sl_name_decode(&r, &q.version.sdk_version);
    int rc = decode_end_exact(&r);
    if (rc == 0)
        *out = q;
    return rc;
}
