/* What sluiced answers today, per command code, for docs/compatibility.md
 * (rendered by tests/unit/test_command_table.c from this and the command
 * table). Keep it next to the handlers it describes. */
#ifndef SL_SERVER_SUPPORT_H
#define SL_SERVER_SUPPORT_H

#include <stdint.h>

/* "yes", "partial: ...", or "not yet (...)". */
const char *sl_server_support(uint32_t code);

#endif
