/* outfile.c — writing a file the user named (coil_write_file, coil.h).
 *
 * What is at the path decides how:
 *   nothing, or a regular file: a temporary file beside it, synced, then renamed over it, so a
 *     failed write (a full disk, an I/O error) leaves the old file or no file, never a partial
 *     one; a file being replaced keeps its mode;
 *   a symbolic link: the same, at the file it points to (the link stays a link);
 *   a character device or a FIFO (/dev/null, /dev/stdout, a pipe): written in place, and every
 *     error reported (/dev/full gives "No space left on device"); never replaced by a file;
 *   anything else (a directory, a socket, a block device): refused. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coil/coil.h"

/* fn writes everything to fd; 0, or -1 with errno set. */
static int
write_in_place(const char *path, coil_write_fn fn, void *ctx, coil_diag *d)
{
  int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return coil_diag_set(d, "%s: cannot open for writing: %s", path, strerror(errno));
  int rc = fn(fd, ctx);
  int e = errno;
  if (close(fd) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  if (rc != 0)
    return coil_diag_set(d, "%s: cannot write: %s", path, strerror(e));
  return 0;
}

static int
write_replacing(const char *path, mode_t mode, coil_write_fn fn, void *ctx, coil_diag *d)
{
  size_t plen = strlen(path);
  char *tmp = coil_xmalloc(plen + sizeof ".tmp.XXXXXX");
  memcpy(tmp, path, plen);
  memcpy(tmp + plen, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    coil_diag_set(d, "%s: cannot create the temporary file %s: %s", path, tmp, strerror(e));
    coil_xfree(tmp);
    return -1;
  }
  /* fsync before rename: otherwise a crash can leave the new name pointing at an empty file */
  const char *fail = NULL;
  if (fn(fd, ctx) != 0)
    fail = "write";
  else if (fchmod(fd, mode) != 0)
    fail = "set the mode of";
  else if (fsync(fd) != 0)
    fail = "sync";
  int e = errno;
  if (close(fd) != 0 && !fail) {
    e = errno;
    fail = "close";
  }
  if (!fail && rename(tmp, path) != 0) {
    e = errno;
    fail = "rename";
  }
  int rc = 0;
  if (fail) {
    unlink(tmp);
    rc = coil_diag_set(d, "%s: cannot %s the temporary file %s: %s", path, fail, tmp, strerror(e));
  }
  coil_xfree(tmp);
  return rc;
}

int
coil_write_file(const char *path, coil_write_fn fn, void *ctx, coil_diag *d)
{
  struct stat st;
  char *resolved = NULL;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
    resolved = realpath(path, NULL);
    if (!resolved)
      return coil_diag_set(d, "%s: a symbolic link to a file that cannot be reached: %s", path,
                           strerror(errno));
    path = resolved;
  }
  int rc;
  if (stat(path, &st) != 0) {
    rc = errno == ENOENT ? write_replacing(path, 0644, fn, ctx, d)
                         : coil_diag_set(d, "%s: cannot write: %s", path, strerror(errno));
  } else if (S_ISREG(st.st_mode)) {
    rc = write_replacing(path, st.st_mode & 07777, fn, ctx, d);
  } else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    rc = write_in_place(path, fn, ctx, d);
  } else {
    rc = coil_diag_set(d, "%s: cannot write: it is %s, not a file", path,
                       S_ISDIR(st.st_mode) ? "a directory" : "a special file");
  }
  coil_xfree(resolved);
  return rc;
}

/* Writes all n bytes of buf to fd, through short writes and EINTR. */
int
coil_write_all(int fd, const void *buf, size_t n)
{
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int
write_text(int fd, void *ctx)
{
  const char *s = ctx;
  return coil_write_all(fd, s, strlen(s));
}

int
coil_write_text_file(const char *path, const char *text, coil_diag *d)
{
  return coil_write_file(path, write_text, (void *)text, d);
}
