/* Fuzz target: the metadata snapshot image (sl_meta_decode), the one file a
 * restart trusts whole. The input is the image without its trailer; the
 * target appends the right XXH3 trailer so that mutations reach the body
 * decoder. A decoded image must encode to an image that decodes to the same
 * bytes again (encoding is canonical). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/assert.h"
#include "base/xxh3.h"
#include "meta/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sl_meta_t *fresh(void)
{
    sl_meta_t *m;
    int rc = sl_meta_create(64, sl_span_str("0.1.0"), &m);
    sl_assert(rc == 0);
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    uint8_t *image = malloc(size + 8);
    sl_assert(image != NULL);
    if (size)
        memcpy(image, data, size);
    sl_store_u64(image + size, sl_xxh3_64(image, size));

    sl_meta_t *m = fresh();
    if (sl_meta_decode(sl_span(image, size + 8), m) == 0) {
        sl_buf_t once, twice;
        sl_buf_init(&once, 0);
        sl_buf_init(&twice, 0);
        sl_assert(sl_meta_encode(m, &once) == 0);
        sl_meta_t *again = fresh();
        sl_assert(sl_meta_decode(sl_buf_span(&once), again) == 0);
        sl_assert(sl_meta_encode(again, &twice) == 0);
        sl_assert(once.len == twice.len && memcmp(once.data, twice.data, once.len) == 0);
        sl_meta_destroy(again);
        sl_buf_free(&once);
        sl_buf_free(&twice);
    }
    sl_meta_destroy(m);
    free(image);
    return 0;
}
