/* artifact_trust.c — the trust boundary of artifact directories (artifact_trust.h): what coil
 * reads of an artifact it did not just write is reached from the artifact's directory
 * descriptor one component at a time with O_NOFOLLOW and checked by fstat on the descriptor
 * that is then read (owner and mode under coil_artifact_trust, artifact.h); a directory is
 * listed the same way; each file is hashed (XXH3-128, for integrity) and fed to the keyed
 * BLAKE2b (libsodium) that makes a cache entry's coil.mac, under the cache's secret key, which
 * is read (or made) here too. What the hashes are compared against (coil.json) and what is
 * done with a checked artifact is artifact.c's; which key file and when, cache.c's. */
#include "artifact_trust.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "coil/strbuf.h"

/* ---- small helpers (artifact_trust.h: artifact.c and cache.c use them too) ---- */

char *
coil_xstrdup(const char *s)
{
  char *p = strdup(s ? s : "");
  if (!p)
    abort(); /* out of memory: the one exit coil.h allows */
  return p;
}

char *
coil_path_join(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = coil_xmalloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

void
coil_hex128(XXH128_hash_t h, char out[33])
{
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
}

/* ---- opening without following symlinks, and checking what was opened ---- */

/* Whether st (of path, for the message) may be part of an artifact under trust t (NULL: no
 * check, the writer's own temporary directory). */
int
coil_trust_check_mode(const struct stat *st, const char *path, const coil_artifact_trust *t,
                      coil_diag *d)
{
  if (!t)
    return 0;
  unsigned mode = (unsigned)(st->st_mode & 0777);
  if (t->owned && st->st_uid != geteuid())
    return coil_diag_set(d, "%s: owned by another user (uid %ld): a cache entry is code that "
                            "coil loads, so every part of it must be this user's",
                         path, (long)st->st_uid);
  if (t->owned && (mode & 022))
    return coil_diag_set(d, "%s: others may write to it (mode %03o): a cache entry is code that "
                            "coil loads, so nobody else may write any part of it", path, mode);
  if (mode & 002)
    return coil_diag_set(d, "%s: anyone may write to it (mode %03o): an artifact is code that "
                            "coil runs; chmod o-w it (and check that it is what you compiled)",
                         path, mode);
  return 0;
}

/* Opens rel ('/'-separated, relative) beneath the directory dfd one component at a time with
 * O_NOFOLLOW (coil_trust_list_files has checked the directories on the way); the last
 * component is opened with `flags` (plus O_NOFOLLOW). Returns the descriptor, or -1 with errno
 * set (ELOOP: a symlink). */
int
coil_trust_open_beneath(int dfd, const char *rel, int flags)
{
  char *copy = coil_xstrdup(rel);
  int at = dfd, fd = -1;
  char *s = copy;
  for (;;) {
    char *slash = strchr(s, '/');
    if (slash)
      *slash = 0;
    fd = openat(at, s, (slash ? O_RDONLY | O_DIRECTORY : flags) | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (at != dfd)
      close(at);
    if (fd < 0 || !slash) {
      errno = e;
      break;
    }
    at = fd;
    s = slash + 1;
  }
  free(copy);
  return fd;
}

/* The reason an open with O_NOFOLLOW failed, in words. */
const char *
coil_trust_open_error(int e)
{
  return e == ELOOP || e == ENOTDIR ? "a symlink or another kind of file where a directory or "
                                      "regular file should be (not followed)" : strerror(e);
}

/* ---- the files of a directory, and their hashes ---- */

void
coil_trust_files_free(coil_file_list *l)
{
  for (int i = 0; i < l->n; i++)
    free(l->files[i].path);
  free(l->files);
  memset(l, 0, sizeof *l);
}

int
coil_trust_by_path(const void *a, const void *b)
{
  return strcmp(((const coil_file_entry *)a)->path, ((const coil_file_entry *)b)->path);
}

/* Adds every regular file under rel (rel "" for the artifact directory dfd itself, named root
 * in messages) except the top-level coil.json and coil.mac; anything neither a file nor a
 * directory (a symlink, a socket) is an error, and each directory and file must pass t. */
int
coil_trust_list_files(int dfd, const char *root, const char *rel, const coil_artifact_trust *t,
                      coil_file_list *out, coil_diag *d)
{
  int fd = *rel ? coil_trust_open_beneath(dfd, rel, O_RDONLY | O_DIRECTORY) : dup(dfd);
  DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
  if (!dp) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    return coil_diag_set(d, "%s/%s: cannot read the directory: %s", root, rel, coil_trust_open_error(e));
  }
  rewinddir(dp); /* a dup shares its offset with dfd, which another listing may have moved */
  int rc = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(dp))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (!*rel && (strcmp(e->d_name, COIL_ARTIFACT_HOST_MANIFEST) == 0 ||
                  strcmp(e->d_name, COIL_ARTIFACT_MAC) == 0))
      continue;
    char *sub = *rel ? coil_path_join(rel, e->d_name) : coil_xstrdup(e->d_name);
    char *full = coil_path_join(root, sub);
    struct stat st;
    if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      rc = coil_diag_set(d, "%s: cannot stat: %s", full, strerror(errno));
    } else if (S_ISDIR(st.st_mode)) {
      rc = coil_trust_check_mode(&st, full, t, d) ? -1 : coil_trust_list_files(dfd, root, sub, t, out, d);
    } else if (!S_ISREG(st.st_mode)) {
      rc = coil_diag_set(d, "%s: not a regular file (an artifact holds only files and "
                            "directories; a symlink is never followed)", full);
    } else if (coil_trust_check_mode(&st, full, t, d)) {
      rc = -1;
    } else {
      if (out->n == out->cap) {
        out->cap = out->cap ? 2 * out->cap : 16;
        out->files = realloc(out->files, (size_t)out->cap * sizeof *out->files);
        if (!out->files)
          abort();
      }
      out->files[out->n++] = (coil_file_entry){.path = sub, .bytes = (uint64_t)st.st_size};
      sub = NULL;
    }
    free(sub);
    free(full);
  }
  closedir(dp);
  return rc;
}

/* Feeds n as 8 little-endian bytes to the keyed hash. */
static void
mac_length(crypto_generichash_state *mac, uint64_t n)
{
  unsigned char b[8];
  for (int k = 0; k < 8; k++)
    b[k] = (unsigned char)(n >> (8 * k));
  crypto_generichash_update(mac, b, sizeof b);
}

/* Hashes the file rel beneath dfd (root/rel in messages), opened without following symlinks
 * and checked against t; fsyncs it when sync (the writer's durability step); feeds its path,
 * bytes and length to mac when not NULL. */
int
coil_trust_hash_file(int dfd, const char *root, const char *rel, bool sync,
                     const coil_artifact_trust *t, crypto_generichash_state *mac, coil_file_entry *f,
                     coil_diag *d)
{
  char *full = coil_path_join(root, rel);
  int fd = coil_trust_open_beneath(dfd, rel, O_RDONLY);
  struct stat st;
  int rc = 0;
  if (fd < 0)
    rc = coil_diag_set(d, "%s: cannot open: %s", full, coil_trust_open_error(errno));
  else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    rc = coil_diag_set(d, "%s: not a regular file", full);
  else if (coil_trust_check_mode(&st, full, t, d))
    rc = -1;
  if (rc) {
    if (fd >= 0)
      close(fd);
    free(full);
    return rc;
  }
  XXH3_state_t *xs = XXH3_createState();
  unsigned char *buf = malloc(1 << 18);
  if (!xs || !buf)
    abort();
  XXH3_128bits_reset(xs);
  if (mac)
    crypto_generichash_update(mac, (const unsigned char *)rel, strlen(rel) + 1);
  uint64_t total = 0;
  ssize_t n;
  for (;;) {
    n = read(fd, buf, 1 << 18);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    XXH3_128bits_update(xs, buf, (size_t)n);
    if (mac)
      crypto_generichash_update(mac, buf, (size_t)n);
    total += (uint64_t)n;
  }
  int e = errno;
  if (n == 0 && sync && fsync(fd) != 0)
    n = -1, e = errno;
  close(fd);
  if (mac)
    mac_length(mac, total);
  coil_hex128(XXH3_128bits_digest(xs), f->hash);
  XXH3_freeState(xs);
  free(buf);
  f->bytes = total;
  if (n < 0)
    rc = coil_diag_set(d, "%s: cannot read: %s", full, strerror(e));
  free(full);
  return rc;
}

/* Starts the keyed hash of an artifact (coil.mac) under key. */
void
coil_trust_mac_begin(crypto_generichash_state *mac, const unsigned char *key)
{
  static const char tag[] = "coil artifact mac 1";
  if (sodium_init() < 0)
    abort(); /* libsodium could not start (no entropy source): nothing here can go on */
  crypto_generichash_init(mac, key, COIL_ARTIFACT_MAC_KEY_BYTES, crypto_generichash_BYTES);
  crypto_generichash_update(mac, (const unsigned char *)tag, sizeof tag);
}

/* Ends it with coil.json's text; out: 64 hex digits. */
void
coil_trust_mac_end(crypto_generichash_state *mac, const char *manifest, size_t len, char out[65])
{
  crypto_generichash_update(mac, (const unsigned char *)manifest, len);
  mac_length(mac, len);
  unsigned char h[crypto_generichash_BYTES];
  crypto_generichash_final(mac, h, sizeof h);
  sodium_bin2hex(out, 65, h, sizeof h);
}

/* The content hash: XXH3-128 over each file's path, size and hash, in path order. */
void
coil_trust_content_hash(const coil_file_list *l, char out[33])
{
  XXH3_state_t *st = XXH3_createState();
  if (!st)
    abort();
  XXH3_128bits_reset(st);
  for (int i = 0; i < l->n; i++) {
    const coil_file_entry *f = &l->files[i];
    unsigned char size[8];
    for (int k = 0; k < 8; k++)
      size[k] = (unsigned char)(f->bytes >> (8 * k));
    XXH3_128bits_update(st, f->path, strlen(f->path) + 1);
    XXH3_128bits_update(st, size, sizeof size);
    XXH3_128bits_update(st, f->hash, 32);
  }
  coil_hex128(XXH3_128bits_digest(st), out);
  XXH3_freeState(st);
}


/* Reads the (small) file rel beneath dfd without following symlinks, checked against t; NULL
 * with errno set when it cannot (EPERM: t refused it, message in d). */
char *
coil_trust_read_text_at(int dfd, const char *root, const char *rel, const coil_artifact_trust *t,
                        size_t limit, size_t *len, coil_diag *d)
{
  int fd = coil_trust_open_beneath(dfd, rel, O_RDONLY);
  struct stat st;
  if (fd < 0)
    return NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  char *full = coil_path_join(root, rel);
  int bad = coil_trust_check_mode(&st, full, t, d);
  free(full);
  FILE *f = bad ? NULL : fdopen(fd, "rb");
  if (!f) {
    close(fd);
    errno = EPERM;
    return NULL;
  }
  coil_strbuf b = {0};
  char chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len <= limit)
    coil_strbuf_putn(&b, chunk, got);
  bad = ferror(f);
  fclose(f);
  if (bad || b.len > limit) {
    coil_strbuf_free(&b);
    errno = bad ? EIO : EFBIG;
    return NULL;
  }
  *len = b.len;
  char *text = coil_strbuf_take(&b);
  return text ? text : coil_xstrdup("");
}

/* ---- the key ---- */

/* Reads the cache's secret key (name under the directory root), creating it on first use:
 * 32 random bytes written to a private temporary file that is then linked to the name, so that
 * concurrent first uses agree on one key and no reader sees half of one. */
int
coil_trust_secret_key(int root, const char *cache_dir, const char *name,
                      unsigned char key[COIL_ARTIFACT_MAC_KEY_BYTES], coil_diag *d)
{
  if (sodium_init() < 0)
    abort(); /* libsodium could not start (no entropy source): nothing here can go on */
  int fd = openat(root, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".key.tmp-%ld-%08x", (long)getpid(), randombytes_random());
    int w = openat(root, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (w < 0)
      return coil_diag_set(d, "%s/%s: cannot create the cache's key: %s", cache_dir, tmp,
                           strerror(errno));
    unsigned char fresh[COIL_ARTIFACT_MAC_KEY_BYTES];
    randombytes_buf(fresh, sizeof fresh);
    int e = 0;
    if (write(w, fresh, sizeof fresh) != (ssize_t)sizeof fresh || fsync(w) != 0)
      e = errno ? errno : EIO;
    if (close(w) != 0 && !e)
      e = errno;
    sodium_memzero(fresh, sizeof fresh);
    if (!e && linkat(root, tmp, root, name, 0) != 0 && errno != EEXIST)
      e = errno; /* EEXIST: another process made it first; use that one */
    unlinkat(root, tmp, 0);
    if (e)
      return coil_diag_set(d, "%s/%s: cannot write the cache's key: %s", cache_dir,
                           name, strerror(e));
    fd = openat(root, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  }
  if (fd < 0)
    return coil_diag_set(d, "%s/%s: cannot open the cache's key: %s", cache_dir,
                         name, errno == ELOOP ? "it is a symlink" : strerror(errno));
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
      (st.st_mode & 077) || st.st_size != COIL_ARTIFACT_MAC_KEY_BYTES)
    rc = coil_diag_set(d, "%s/%s: not a key only this user can read (expected a regular file of "
                          "%d bytes, owned by uid %ld, mode 600; found uid %ld, mode %03o, %lld "
                          "bytes): remove it and coil makes a new one (every entry is then "
                          "compiled again)", cache_dir, name,
                       COIL_ARTIFACT_MAC_KEY_BYTES, (long)geteuid(), (long)st.st_uid,
                       (unsigned)(st.st_mode & 0777), (long long)st.st_size);
  else if (read(fd, key, COIL_ARTIFACT_MAC_KEY_BYTES) != COIL_ARTIFACT_MAC_KEY_BYTES)
    rc = coil_diag_set(d, "%s/%s: cannot read the cache's key: %s", cache_dir,
                       name, strerror(errno));
  close(fd);
  return rc;
}
