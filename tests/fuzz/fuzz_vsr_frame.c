/* libFuzzer target: the replica-plane decoders of src/vsr (frame.h,
 * client_table.h). Input: [mode][bytes].
 *   mode & 3 == 0: bytes are a frame, decoded as they are;
 *   mode & 3 == 1: the same after the target recomputes the body seal and
 *                  the frame seal / prepare identity, so mutations get past
 *                  the seals to the field and suffix rules;
 *   mode & 3 == 2: bytes are a state manifest;
 *   mode & 3 == 3: bytes are a client table (ICT2) without its trailer (the
 *                  target appends the right XXH3).
 * What must hold: a frame that decodes has size == length, a named command
 * and, for consensus frames, a valid group; its header re-encoded from the
 * decoded fields decodes again to the same header bytes (encode is a fixed
 * point after one step); every suffix entry of a DoViewChange / StartView
 * reads; a manifest that decodes re-encodes to the same bytes when its
 * entries are 25 bytes; a client table that decodes re-encodes to the same
 * bytes. */
#include <stdlib.h>
#include <string.h>

#include "base/xxh3.h"
#include "vsr/client_table.h"
#include "vsr/frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_MAX (1u << 20)

static void reseal(uint8_t *p, size_t len)
{
    if (len < SL_HEADER_SIZE)
        return;
    sl_store_u32(p + 48, (uint32_t)len);
    uint8_t command = p[60];
    sl_span_t body = sl_span(p + SL_HEADER_SIZE, len - SL_HEADER_SIZE);
    uint64_t group = 0;
    if (command == SL_VSR_PREPARE || command == SL_VSR_REPAIR_PREPARE)
        group = sl_load_u64(p + 216);
    bool sealed_body = command == SL_VSR_DO_VIEW_CHANGE || command == SL_VSR_START_VIEW ||
                       ((command == SL_VSR_PREPARE || command == SL_VSR_REPAIR_PREPARE) &&
                        sl_vsr_group_is_metadata(group));
    sl_store_u128(p + 16, sealed_body ? sl_vsr_checksum(body) : (sl_u128_t){0, 0});
    if (command == SL_VSR_PREPARE || command == SL_VSR_REPAIR_PREPARE)
        sl_store_u128(p, sl_vsr_prepare_identity(p));
    else if (sl_vsr_command_sealed(command))
        sl_store_u128(p, sl_vsr_frame_seal(p));
}

static void check_frame(const uint8_t *p, size_t len)
{
    sl_vsr_frame_t f;
    if (sl_vsr_frame_decode(p, len, FRAME_MAX, &f) != SL_VSR_OK)
        return;
    sl_assert(f.h.size == len && sl_vsr_command_name(f.h.command) != NULL);
    uint64_t group;
    if (sl_vsr_frame_group(&f, &group))
        sl_assert(sl_vsr_group_valid(group));
    if (f.h.command == SL_VSR_DO_VIEW_CHANGE || f.h.command == SL_VSR_START_VIEW) {
        uint64_t op = f.h.command == SL_VSR_START_VIEW ? f.u.start_view.op : f.u.do_view_change.op;
        for (uint32_t i = 0; i < f.body.len / SL_HEADER_SIZE; i++) {
            sl_vsr_suffix_entry_t e;
            sl_assert(sl_vsr_suffix_entry(f.body, i, op, &e) == SL_VSR_OK);
            sl_assert(e.prepare.op == op - i);
        }
    }
    /* Re-encode from the decoded fields: it decodes, and a second round is
     * byte-identical (reserved bytes of sealed headers are zeroed once). */
    uint8_t *a = malloc(len);
    uint8_t *b = malloc(len);
    sl_assert(a && b);
    memcpy(a + SL_HEADER_SIZE, f.body.ptr, f.body.len);
    memcpy(b + SL_HEADER_SIZE, f.body.ptr, f.body.len);
    sl_span_t body = sl_span(a + SL_HEADER_SIZE, f.body.len);
    sl_vsr_header_encode(a, &f, body);
    sl_vsr_frame_t g;
    sl_assert(sl_vsr_frame_decode(a, len, FRAME_MAX, &g) == SL_VSR_OK);
    sl_vsr_header_encode(b, &g, sl_span(b + SL_HEADER_SIZE, g.body.len));
    sl_assert(memcmp(a, b, len) == 0);
    /* Fields the receiver acts on survive the first re-encoding. */
    sl_assert(g.h.command == f.h.command && g.h.view == f.h.view && g.h.replica == f.h.replica);
    sl_assert(sl_u128_eq(g.h.cluster, f.h.cluster));
    free(a);
    free(b);
}

static void check_manifest(const uint8_t *p, size_t len)
{
    sl_vsr_artifact_t entries[64];
    uint32_t count;
    if (sl_vsr_manifest_decode(sl_span(p, len), entries, 64, &count) != 0)
        return;
    sl_assert(count <= 64);
    if (p[8] != SL_VSR_MANIFEST_ENTRY_LEN)
        return;
    sl_buf_t out;
    sl_buf_init(&out, 0);
    sl_vsr_manifest_encode(&out, entries, count);
    sl_assert(sl_buf_ok(&out) && out.len == len && memcmp(out.data, p, len) == 0);
    sl_buf_free(&out);
}

static void check_clients(const uint8_t *p, size_t len)
{
    sl_buf_t in;
    sl_buf_init(&in, 0);
    sl_put_bytes(&in, p, len);
    sl_put_u64(&in, sl_xxh3_64(p, len));
    sl_vsr_clients_t t;
    sl_assert(sl_vsr_clients_init(&t, 16, 4096) == 0);
    if (sl_vsr_clients_decode(&t, sl_buf_span(&in)) == 0) {
        sl_buf_t out;
        sl_buf_init(&out, 0);
        sl_vsr_clients_encode(&t, &out);
        sl_assert(sl_buf_ok(&out) && out.len == in.len && memcmp(out.data, in.data, in.len) == 0);
        sl_buf_free(&out);
    }
    sl_vsr_clients_free(&t);
    sl_buf_free(&in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > FRAME_MAX)
        return 0;
    uint8_t mode = data[0] & 3;
    const uint8_t *p = data + 1;
    size_t len = size - 1;
    if (mode == 2) {
        check_manifest(p, len);
    } else if (mode == 3) {
        check_clients(p, len);
    } else {
        uint8_t *copy = malloc(len ? len : 1);
        sl_assert(copy != NULL);
        memcpy(copy, p, len);
        if (mode == 1)
            reseal(copy, len);
        check_frame(copy, len);
        free(copy);
    }
    return 0;
}
