/* The data directory's owner lock (server/datadir.h). */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "server/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sluice/error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/io.h"
#include "base/log.h"

/* The holder's PID as the lock file states it, or 0 when it does not say
 * (a holder that has not written it yet, or a file someone emptied). */
static long holder_pid(int fd)
{
    char text[32];
    ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    char *end = NULL;
    long pid = strtol(text, &end, 10);
    return end != text && pid > 0 ? pid : 0;
}

static int refuse_in_use(const char *path, const char *lock_path, int fd, char *err, size_t err_len)
{
    long pid = holder_pid(fd);
    char who[48];
    if (pid > 0)
        snprintf(who, sizeof(who), "pid %ld", pid);
    else
        snprintf(who, sizeof(who), "pid unknown");
    snprintf(err, err_len,
             "data directory %s is in use by another sluiced (%s, lock %s); stop it, or give "
             "this server another system.path",
             path, who, lock_path);
    return -SL_ERR_CANNOT_OPEN_DATABASE;
}

/* Replaces the lock file's text with this process's PID. Only the refusal
 * message of a second server reads it, so a failure is logged, not fatal. */
static void write_pid(int fd, const char *lock_path)
{
    char text[32];
    int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n)
        sl_log_warn("cannot write this process's pid into %s: %s", lock_path, strerror(errno));
}

/* The directory's permission bits become the configured ones (sl_io_dir_mode).
 * A directory made by an older sluiced (0755) or by hand may let every
 * local user read the files inside, which older servers made 0644: with
 * the top level closed, nobody else reaches them, whatever their own
 * modes. Special bits (a setgid directory for group ownership) stay. A
 * failure is logged: the server can still run, the operator must fix it. */
static void set_mode(const char *path)
{
    struct stat st;
    mode_t want = sl_io_dir_mode();
    if (stat(path, &st) != 0) {
        sl_log_warn("data directory %s: cannot read its mode: %s", path, strerror(errno));
        return;
    }
    mode_t have = st.st_mode & 0777;
    if (have == want)
        return;
    mode_t mode = (st.st_mode & 07000) | want;
    const char *setting = want & 0070 ? "true" : "false";
    if (chmod(path, mode) != 0) {
        sl_log_warn("data directory %s: mode %04o, cannot change it to %04o "
                    "(system.group_access = %s): %s",
                    path, (unsigned)have, (unsigned)want, setting, strerror(errno));
        return;
    }
    sl_log_warn("data directory %s: mode %04o changed to %04o (system.group_access = %s)", path,
                (unsigned)have, (unsigned)want, setting);
}

int sl_datadir_lock(const char *path, int *lock_fd, char *err, size_t err_len)
{
    *lock_fd = -1;
    if (mkdir(path, sl_io_dir_mode()) != 0 && errno != EEXIST) {
        snprintf(err, err_len, "cannot create the data directory %s: %s", path, strerror(errno));
        return -SL_ERR_CANNOT_CREATE_BASE_DIRECTORY;
    }
    char lock_path[PATH_MAX];
    int len = snprintf(lock_path, sizeof(lock_path), "%s/%s", path, SL_DATADIR_LOCK_FILE);
    if (len < 0 || (size_t)len >= sizeof(lock_path)) {
        snprintf(err, err_len, "data directory path too long: %s", path);
        return -SL_ERR_INVALID_CONFIGURATION;
    }
    /* No O_TRUNC: a refused server must leave the holder's file as it is. */
    int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, sl_io_file_mode());
    if (fd < 0) {
        snprintf(err, err_len, "cannot open the lock file %s: %s", lock_path, strerror(errno));
        return -SL_ERR_CANNOT_OPEN_DATABASE;
    }
    /* The whole file, exclusively; l_pid must be 0 for an OFD lock. */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        int rc;
        if (errno == EAGAIN || errno == EACCES)
            rc = refuse_in_use(path, lock_path, fd, err, err_len);
        else {
            snprintf(err, err_len, "cannot lock %s: %s", lock_path, strerror(errno));
            rc = -SL_ERR_CANNOT_OPEN_DATABASE;
        }
        close(fd);
        return rc;
    }
    write_pid(fd, lock_path);
    set_mode(path);
    *lock_fd = fd;
    return 0;
}

void sl_datadir_unlock(int lock_fd)
{
    if (lock_fd >= 0)
        close(lock_fd);
}

int sl_datadir_write_private(const char *dir, const char *name, const char *text, char *path)
{
    int len = snprintf(path, PATH_MAX, "%s/%s", dir, name);
    if (len < 0 || len >= PATH_MAX)
        return -ENAMETOOLONG;
    int fd = sl_io_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return fd;
    /* A file left from an earlier first start may have had another mode. */
    int rc = fchmod(fd, 0600) == 0 ? 0 : -errno;
    if (rc == 0)
        rc = sl_io_pwrite_all(fd, text, strlen(text), 0);
    if (rc == 0)
        rc = sl_io_fsync(fd);
    sl_io_close(fd);
    if (rc == 0)
        rc = sl_io_fsync_dir(dir);
    return rc;
}
