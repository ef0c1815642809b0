/* faultwrite.c — an LD_PRELOAD library for tools/tests/faults.sh (built only for the tests): it
 * makes the Nth write-side call of a coil process fail, as a full disk or a failing device would.
 *
 * Environment:
 *   COIL_FAULT_EXE      the binary whose calls count (compared with /proc/self/exe); other
 *                       processes that inherit the library (the C compiler coil spawns, the shell,
 *                       timeout) are left alone. Unset: no process counts.
 *   COIL_FAULT_WRITE    N: the Nth write-side call fails (1-based; unset or 0: none fails, the calls
 *                       are only counted)
 *   COIL_FAULT_ERRNO    ENOSPC (the default) or EIO
 *   COIL_FAULT_PERSIST  1: the Nth call and every later one fail (a disk that stays full)
 *   COIL_FAULT_REPORT   a file to which the process appends, at exit, "calls T injected K" (T
 *                       write-side calls seen, K of them failed), and at the first injection,
 *                       "fault: call N: FUNCTION PATH"
 *   COIL_FAULT_TRACE    1: the report also gets "call K: FUNCTION PATH" for every call
 *
 * Write-side calls: the descriptor calls (write, pwrite, writev, pwritev, fsync, fdatasync,
 * ftruncate, close of a descriptor open for writing), the calls that create a name (open and
 * fopen for writing or creating, mkstemp, mkdtemp, mkdir, rename), and the stdio calls, which
 * glibc sends to the kernel through its own internal write rather than through the interposable
 * one (fwrite, fputs, fputc, putc, puts, putchar, printf, fprintf, vprintf, vfprintf and their
 * _FORTIFY_SOURCE forms, fflush, fclose of a stream open for writing). The standard error
 * (descriptor 2, stderr) never counts: it is where coil says what failed.
 *
 * A failure is what the kernel would do: the call does nothing and returns its error, except
 * close and fclose, which release the descriptor (Linux frees it even when close fails) and, for
 * fclose, drop the data still buffered, so the file is left short. A failed stdio call sets the
 * stream's error flag, as a failed write of glibc's buffer would. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static bool active;                /* this process is the one named by COIL_FAULT_EXE */
static long fail_at;               /* N, 0 for none */
static bool persist;
static int fail_errno = ENOSPC;
static const char *report;
static bool trace;
static atomic_long calls, injected;

/* Writes s to the report file with raw system calls, so that none of this counts. */
static void
report_line(const char *s)
{
  if (!report)
    return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  syscall(SYS_write, fd, s, strlen(s));
  syscall(SYS_close, fd);
}

__attribute__((constructor)) static void
setup(void)
{
  const char *exe = getenv("COIL_FAULT_EXE");
  char self[PATH_MAX], want[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (!exe || n <= 0 || !realpath(exe, want))
    return;
  self[n] = 0;
  if (strcmp(self, want) != 0)
    return;
  active = true;
  const char *s = getenv("COIL_FAULT_WRITE");
  fail_at = s ? strtol(s, NULL, 10) : 0;
  s = getenv("COIL_FAULT_PERSIST");
  persist = s && strcmp(s, "1") == 0;
  s = getenv("COIL_FAULT_ERRNO");
  if (s && strcmp(s, "EIO") == 0)
    fail_errno = EIO;
  report = getenv("COIL_FAULT_REPORT");
  s = getenv("COIL_FAULT_TRACE");
  trace = s && strcmp(s, "1") == 0;
}

__attribute__((destructor)) static void
finish(void)
{
  if (!active)
    return;
  char line[128];
  snprintf(line, sizeof line, "calls %ld injected %ld\n", atomic_load(&calls), atomic_load(&injected));
  report_line(line);
}

/* Counts one write-side call (what: the function, path: the file, for the report); true when it
 * must fail, with errno set. */
static bool
fault(const char *what, const char *path)
{
  if (!active)
    return false;
  long k = atomic_fetch_add(&calls, 1) + 1;
  if (trace) {
    char line[PATH_MAX + 128];
    snprintf(line, sizeof line, "call %ld: %s %s\n", k, what, path ? path : "?");
    report_line(line);
  }
  if (fail_at <= 0 || k < fail_at || (k > fail_at && !persist))
    return false;
  if (atomic_fetch_add(&injected, 1) == 0) {
    char line[PATH_MAX + 128];
    snprintf(line, sizeof line, "fault: call %ld: %s %s\n", k, what, path ? path : "?");
    report_line(line);
  }
  errno = fail_errno;
  return true;
}

static bool
fault_fd(const char *what, int fd)
{
  if (!active || fd == STDERR_FILENO)
    return false;
  char link[64], path[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  path[n > 0 ? n : 0] = 0;
  return fault(what, path);
}

static bool
fault_stream(const char *what, FILE *f)
{
  if (!active || f == stderr)
    return false;
  int fd = f ? fileno(f) : -1;
  if (fd == STDERR_FILENO)
    return false;
  if (!fault_fd(what, fd))
    return false;
  if (f)
    f->_flags |= _IO_ERR_SEEN; /* as glibc's own failed write does: ferror() sees it */
  return true;
}

#undef putc
#undef putchar
#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

/* ---- descriptors ---- */

ssize_t
write(int fd, const void *buf, size_t n)
{
  return fault_fd("write", fd) ? -1 : REAL(write)(fd, buf, n);
}

ssize_t
pwrite(int fd, const void *buf, size_t n, off_t off)
{
  return fault_fd("pwrite", fd) ? -1 : REAL(pwrite)(fd, buf, n, off);
}

ssize_t
pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
  return fault_fd("pwrite64", fd) ? -1 : REAL(pwrite64)(fd, buf, n, off);
}

ssize_t
writev(int fd, const struct iovec *iov, int n)
{
  return fault_fd("writev", fd) ? -1 : REAL(writev)(fd, iov, n);
}

ssize_t
pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
  return fault_fd("pwritev", fd) ? -1 : REAL(pwritev)(fd, iov, n, off);
}

int
fsync(int fd)
{
  return fault_fd("fsync", fd) ? -1 : REAL(fsync)(fd);
}

int
fdatasync(int fd)
{
  return fault_fd("fdatasync", fd) ? -1 : REAL(fdatasync)(fd);
}

int
ftruncate(int fd, off_t len)
{
  return fault_fd("ftruncate", fd) ? -1 : REAL(ftruncate)(fd, len);
}

int
close(int fd)
{
  int mode = active ? fcntl(fd, F_GETFL) : -1;
  bool writing = mode >= 0 && (mode & O_ACCMODE) != O_RDONLY;
  if (writing && fault_fd("close", fd)) {
    REAL(close)(fd); /* Linux frees the descriptor even when close reports an error */
    errno = fail_errno;
    return -1;
  }
  return REAL(close)(fd);
}

/* ---- names ---- */

static bool
creating(int flags)
{
  return (flags & (O_CREAT | O_TRUNC)) || (flags & O_ACCMODE) != O_RDONLY;
}

static mode_t
mode_arg(int flags, va_list ap)
{
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int
open(const char *path, int flags, ...)
{
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return creating(flags) && fault("open", path) ? -1 : REAL(open)(path, flags, mode);
}

int
open64(const char *path, int flags, ...)
{
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return creating(flags) && fault("open64", path) ? -1 : REAL(open64)(path, flags, mode);
}

int
openat(int dirfd, const char *path, int flags, ...)
{
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return creating(flags) && fault("openat", path) ? -1 : REAL(openat)(dirfd, path, flags, mode);
}

static bool
write_mode(const char *mode)
{
  return strpbrk(mode, "wa+") != NULL;
}

FILE *
fopen(const char *path, const char *mode)
{
  return write_mode(mode) && fault("fopen", path) ? NULL : REAL(fopen)(path, mode);
}

FILE *
fopen64(const char *path, const char *mode)
{
  return write_mode(mode) && fault("fopen64", path) ? NULL : REAL(fopen64)(path, mode);
}

int
mkstemp(char *tmpl)
{
  return fault("mkstemp", tmpl) ? -1 : REAL(mkstemp)(tmpl);
}

char *
mkdtemp(char *tmpl)
{
  return fault("mkdtemp", tmpl) ? NULL : REAL(mkdtemp)(tmpl);
}

int
mkdir(const char *path, mode_t mode)
{
  struct stat st; /* the kernel says EEXIST before it looks for room */
  if (active && lstat(path, &st) == 0) {
    errno = EEXIST;
    return -1;
  }
  return fault("mkdir", path) ? -1 : REAL(mkdir)(path, mode);
}

int
rename(const char *from, const char *to)
{
  return fault("rename", to) ? -1 : REAL(rename)(from, to);
}

/* ---- stdio ---- */

size_t
fwrite(const void *p, size_t size, size_t n, FILE *f)
{
  return fault_stream("fwrite", f) ? 0 : REAL(fwrite)(p, size, n, f);
}

int
fputs(const char *s, FILE *f)
{
  return fault_stream("fputs", f) ? EOF : REAL(fputs)(s, f);
}

int
fputc(int c, FILE *f)
{
  return fault_stream("fputc", f) ? EOF : REAL(fputc)(c, f);
}

int
putc(int c, FILE *f)
{
  return fault_stream("putc", f) ? EOF : REAL(putc)(c, f);
}

int
puts(const char *s)
{
  return fault_stream("puts", stdout) ? EOF : REAL(puts)(s);
}

int
putchar(int c)
{
  return fault_stream("putchar", stdout) ? EOF : REAL(putchar)(c);
}

int
vfprintf(FILE *f, const char *fmt, va_list ap)
{
  return fault_stream("vfprintf", f) ? -1 : REAL(vfprintf)(f, fmt, ap);
}

int
vprintf(const char *fmt, va_list ap)
{
  return fault_stream("vprintf", stdout) ? -1 : REAL(vfprintf)(stdout, fmt, ap);
}

int
fprintf(FILE *f, const char *fmt, ...)
{
  if (fault_stream("fprintf", f))
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = REAL(vfprintf)(f, fmt, ap);
  va_end(ap);
  return n;
}

int
printf(const char *fmt, ...)
{
  if (fault_stream("printf", stdout))
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = REAL(vfprintf)(stdout, fmt, ap);
  va_end(ap);
  return n;
}

/* the forms -D_FORTIFY_SOURCE compiles printf and fprintf into */
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap);
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int __printf_chk(int flag, const char *fmt, ...);

int
__vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
  return fault_stream("__vfprintf_chk", f) ? -1 : REAL(__vfprintf_chk)(f, flag, fmt, ap);
}

int
__fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
  if (fault_stream("__fprintf_chk", f))
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = REAL(__vfprintf_chk)(f, flag, fmt, ap);
  va_end(ap);
  return n;
}

int
__printf_chk(int flag, const char *fmt, ...)
{
  if (fault_stream("__printf_chk", stdout))
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = REAL(__vfprintf_chk)(stdout, flag, fmt, ap);
  va_end(ap);
  return n;
}

int
fflush(FILE *f)
{
  return f && fault_stream("fflush", f) ? EOF : REAL(fflush)(f);
}

int
fclose(FILE *f)
{
  if (active && f != stderr && __fwritable(f) && fault_stream("fclose", f)) {
    __fpurge(f); /* what was still buffered never reaches the file */
    REAL(fclose)(f);
    errno = fail_errno;
    return EOF;
  }
  return REAL(fclose)(f);
}
