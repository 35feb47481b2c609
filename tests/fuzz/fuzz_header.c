/* libFuzzer target: the three 256-byte frame headers (wire/header.h).
 * The first 256 bytes of the input (zero-padded when shorter) go to every
 * header decoder; whatever decodes must survive an encode/decode round trip. */
#include <sluice/error.h>
#include <stdint.h>
#include <string.h>

#include "base/limits.h"
#include "wire/header.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A small frame limit exercises the size check at a value the fuzzer can
 * reach by mutating a few bytes. */
#define SMALL_FRAME_MAX 4096u

static bool request_fields_eq(const sl_request_header_t *a, const sl_request_header_t *b)
{
    return a->size == b->size && sl_u128_eq(a->client, b->client) &&
           sl_u128_eq(a->request_checksum, b->request_checksum) && a->timestamp == b->timestamp &&
           a->request == b->request && a->operation == b->operation && a->session == b->session &&
           a->user_id == b->user_id && a->code == b->code;
}

static void check_request(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max)
{
    sl_request_header_t h;
    sl_hdr_verdict_t v = sl_request_header_decode(hdr, frame_max, &h);
    sl_assert(sl_hdr_verdict_name(v) != NULL);
    if (v != SL_HDR_OK)
        return;
    sl_assert(h.size >= SL_HEADER_SIZE && h.size <= frame_max);
    sl_assert(sl_op_declared(h.operation) && !sl_u128_is_zero(h.client));

    uint8_t again[SL_HEADER_SIZE];
    sl_request_header_encode(again, &h);
    sl_request_header_t h2;
    sl_assert(sl_request_header_decode(again, frame_max, &h2) == SL_HDR_OK);
    /* The encoder writes the command code only for NonReplicated (framing.md
     * 3); elsewhere the received code is not part of the request. */
    if (h.operation != SL_OP_NON_REPLICATED)
        h.code = 0;
    sl_assert(request_fields_eq(&h, &h2));
    /* Every field the decoder reads sits where the encoder put it. */
    static const struct {
        uint32_t off, len;
    } fields[] = {
        {SL_HDR_OFF_SIZE, 4},      {SL_HDR_OFF_COMMAND, 1},
        {SL_REQ_OFF_CLIENT, 16},   {SL_REQ_OFF_REQUEST_CHECKSUM, 16},
        {SL_REQ_OFF_TIMESTAMP, 8}, {SL_REQ_OFF_REQUEST, 8},
        {SL_REQ_OFF_OPERATION, 1}, {SL_REQ_OFF_SESSION, 8},
        {SL_REQ_OFF_USER_ID, 4},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(fields); i++)
        sl_assert(memcmp(hdr + fields[i].off, again + fields[i].off, fields[i].len) == 0);
}

static void check_reply(const uint8_t hdr[SL_HEADER_SIZE], uint32_t frame_max)
{
    sl_reply_header_t h;
    if (sl_reply_header_decode(hdr, frame_max, &h) != 0)
        return;
    sl_assert(h.size >= SL_HEADER_SIZE && h.size <= frame_max && sl_op_declared(h.operation));
    sl_assert(h.status == 0 || h.size == SL_HEADER_SIZE);
    uint8_t again[SL_HEADER_SIZE];
    sl_reply_header_encode(again, &h);
    sl_reply_header_t h2;
    sl_assert(sl_reply_header_decode(again, frame_max, &h2) == 0);
    /* Every reply field is carried: the re-encoding of the re-decoded header
     * is the same 256 bytes, and it matches the input outside the checksum
     * (0..32), reserved (62..128, 220..256) and padding (209..216) runs,
     * which receivers ignore. */
    uint8_t third[SL_HEADER_SIZE];
    sl_reply_header_encode(third, &h2);
    sl_assert(memcmp(again, third, SL_HEADER_SIZE) == 0);
    sl_assert(memcmp(hdr + 32, again + 32, 62 - 32) == 0);
    sl_assert(memcmp(hdr + 128, again + 128, SL_REP_OFF_OPERATION + 1 - 128) == 0);
    sl_assert(memcmp(hdr + SL_REP_OFF_STATUS, again + SL_REP_OFF_STATUS, 4) == 0);
}

static void check_eviction(const uint8_t hdr[SL_HEADER_SIZE])
{
    sl_eviction_header_t h;
    if (sl_eviction_header_decode(hdr, &h) != 0)
        return;
    sl_assert(h.reason >= 1 && h.reason <= SL_EVICT_MALFORMED_LOGIN);
    sl_assert(sl_evict_reason_name(h.reason) != NULL);
    int err = sl_eviction_error(&h);
    sl_assert(err > 0);
    /* An invalid reason-14 window is reported as Unauthenticated (framing.md 8). */
    if (h.reason == SL_EVICT_INCOMPATIBLE_PROTOCOL &&
        (h.version_min == 0 || h.version_max < h.version_min))
        sl_assert(err == SL_ERR_UNAUTHENTICATED);
    uint8_t again[SL_HEADER_SIZE];
    sl_eviction_header_encode(again, &h);
    /* Byte-identical from offset 32 on: the decoder checks every reserved
     * byte there. Bytes 0..32 (checksum, checksum_body) are unused on client
     * frames; the encoder writes them as zero and receivers ignore them. */
    sl_assert(memcmp(hdr + 32, again + 32, SL_HEADER_SIZE - 32) == 0);
    sl_assert(sl_all_zero(again, 32));
    sl_eviction_header_t h2;
    sl_assert(sl_eviction_header_decode(again, &h2) == 0);
    sl_assert(sl_eviction_error(&h2) == err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t hdr[SL_HEADER_SIZE] = {0};
    memcpy(hdr, data, size < SL_HEADER_SIZE ? size : SL_HEADER_SIZE);

    check_request(hdr, SMALL_FRAME_MAX);
    check_request(hdr, SL_FRAME_MAX_DEFAULT);
    check_reply(hdr, SMALL_FRAME_MAX);
    check_reply(hdr, SL_FRAME_MAX_DEFAULT);
    check_eviction(hdr);
    return 0;
}
