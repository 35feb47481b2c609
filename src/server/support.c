/* Per-command support of sluiced (server/support.h). */
#include "server/support.h"

#include "wire/command.h"

const char *sl_server_support(uint32_t code)
{
    switch (code) {
    case SL_CMD_FLUSH_UNSAVED_BUFFER:
        return "yes (status 5, as the reference)";
    case SL_CMD_LOGIN_USER:
    case SL_CMD_LOGIN_WITH_PERSONAL_ACCESS_TOKEN:
        return "yes (eviction 15, as the reference)";
    default:
        return sl_command_by_code(code) ? "yes" : "no";
    }
}
