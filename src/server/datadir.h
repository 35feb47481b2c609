/* The data directory belongs to one sluiced at a time. Before the server
 * reads or writes anything in it, it takes an exclusive lock on
 * <data_dir>/sluiced.lock and holds it until the process ends; a second
 * server on the same directory is refused before it has written anything.
 *
 * The lock is an open-file-description lock (fcntl F_OFD_SETLK): the kernel
 * drops it when the process dies, SIGKILL included, so a crash never leaves
 * a stale lock behind; and unlike a classic POSIX record lock it is not lost
 * when the process happens to close some other descriptor of the same file.
 * The lock file lives inside the data directory so that it travels with it
 * (a moved or remounted directory keeps its owner check). The holder writes
 * its PID into the file, for the refusal message only: the PID never
 * decides anything. */
#ifndef SL_SERVER_DATADIR_H
#define SL_SERVER_DATADIR_H

#include <stddef.h>

#include "base/assert.h"

#define SL_DATADIR_LOCK_FILE "sluiced.lock"

/* Creates path when it is absent (its parent must exist), then takes the
 * lock, then gives the directory the permission bits of sl_io_dir_mode()
 * (logged when they change: an existing directory may be wider). 0 with
 * *lock_fd the descriptor to keep open for the life of the process; or a
 * negative error with err saying why:
 * "data directory D is in use by another sluiced (pid N, lock D/sluiced.lock)..."
 * when another process holds it, in which case nothing in the directory
 * was created or changed. */
SL_WUR int sl_datadir_lock(const char *path, int *lock_fd, char *err, size_t err_len);
/* Releases the lock (closes the descriptor); -1 is ignored. */
void sl_datadir_unlock(int lock_fd);

/* The file the generated root password is written to, in the data
 * directory: only its owner may read it (docs/security.md). */
#define SL_DATADIR_ROOT_PASSWORD_FILE "root_password"

/* Writes text into <dir>/<name>, replacing what was there, with mode 0600
 * whatever system.group_access says (a secret is for the owner alone), and
 * makes it durable (the file and its directory entry). Its path goes to
 * path (PATH_MAX bytes). 0 or -errno. */
SL_WUR int sl_datadir_write_private(const char *dir, const char *name, const char *text,
                                    char *path);

#endif
