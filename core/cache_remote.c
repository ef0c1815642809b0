/* cache_remote.c — the compile cache shared through Redis (cache_remote.h): the URL and the
 * team key, a Redis connection driven under one deadline, the entry's blob (packing, checking,
 * unpacking), and the notes and back-off that keep a sick Redis from failing or slowing runs.
 *
 * The blob of one entry (one Redis string, so that a publish cut short leaves nothing: Redis
 * runs a SET only once it has read all of it):
 *
 *   0    8   magic "COILRC\0\1" (the last byte: the blob format)
 *   8    8   key id: the first 8 bytes of a keyed BLAKE2b of "coil key id 1" (says which team
 *            key made it, for the note; the MAC below is what is trusted)
 *   16   32  the cache key, 32 hex digits
 *   48   4   H, little-endian; then H bytes of header text, "NAME VALUE\n" lines: plugin,
 *            version, coil, files
 *   ...      each file: path length (4), path, mode (1: 0 = 0600, 1 = 0700), size (8), bytes
 *   end  32  keyed BLAKE2b-256 (the team key) of "coil remote entry 1" and everything before
 *
 * The MAC is checked before anything past the fixed header is parsed, and the parse checks
 * every length against what is left, so a truncated, padded or edited blob is refused whole. */
#define _GNU_SOURCE
#include "cache_remote.h"

#include <errno.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "artifact.h"
#include "artifact_trust.h"
#include "config.h"

#define BLOB_MAGIC "COILRC\0\1"
#define BLOB_FIXED 52          /* magic, key id, cache key, H */
#define BLOB_MAC 32
#define BLOB_MAX_FILES 4096
#define BACKOFF_SECONDS 30
#define KEY_BYTES 32

/* ---- the URL ---- */

static int
parse_int(const char *s, size_t n, int lo, int hi, int *out)
{
  if (n == 0 || n > 9)
    return -1;
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  if (v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

int
coil_remote_parse_url(const char *text, coil_remote_url *u, char *why, size_t wn)
{
  static const char expected[] = "expected redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///PATH[?db=N]";
  memset(u, 0, sizeof *u);
  u->port = 6379;
  if (strncmp(text, "unix://", 7) == 0) {
    const char *p = text + 7, *q = strchr(p, '?');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n == 0 || p[0] != '/' || n >= sizeof u->path) {
      snprintf(why, wn, "'%s': %s (the socket's absolute path, under %zu characters)", text, expected,
               sizeof u->path);
      return -1;
    }
    memcpy(u->path, p, n);
    u->unix_socket = true;
    if (q && (strncmp(q, "?db=", 4) != 0 || parse_int(q + 4, strlen(q + 4), 0, 1 << 20, &u->db))) {
      snprintf(why, wn, "'%s': after the path only ?db=N (a database number)", text);
      return -1;
    }
    return 0;
  }
  if (strncmp(text, "redis://", 8) != 0) {
    snprintf(why, wn, "'%s': %s", text, expected);
    return -1;
  }
  const char *p = text + 8, *at = strrchr(p, '@');
  if (at) { /* USER:PASSWORD@ or :PASSWORD@ */
    const char *colon = memchr(p, ':', (size_t)(at - p));
    size_t un = colon ? (size_t)(colon - p) : 0;
    size_t pn = colon ? (size_t)(at - colon - 1) : (size_t)(at - p);
    const char *pw = colon ? colon + 1 : p;
    if (un >= sizeof u->user || pn >= sizeof u->password || pn == 0) {
      snprintf(why, wn, "'%s': the user or password is empty or too long", text);
      return -1;
    }
    memcpy(u->user, p, un);
    memcpy(u->password, pw, pn);
    p = at + 1;
  }
  size_t hn = strcspn(p, ":/");
  if (hn == 0 || hn >= sizeof u->host) {
    snprintf(why, wn, "'%s': %s (no host)", text, expected);
    return -1;
  }
  memcpy(u->host, p, hn);
  for (size_t i = 0; i < hn; i++)
    if (!(u->host[i] == '.' || u->host[i] == '-' || u->host[i] == '_' || (u->host[i] >= '0' && u->host[i] <= '9') ||
          (u->host[i] >= 'a' && u->host[i] <= 'z') || (u->host[i] >= 'A' && u->host[i] <= 'Z'))) {
      snprintf(why, wn, "'%s': the host '%s' is not a name or an IPv4 address", text, u->host);
      return -1;
    }
  p += hn;
  if (*p == ':') {
    size_t n = strcspn(++p, "/");
    if (parse_int(p, n, 1, 65535, &u->port)) {
      snprintf(why, wn, "'%s': the port must be a number from 1 to 65535", text);
      return -1;
    }
    p += n;
  }
  if (*p == '/' && p[1] && parse_int(p + 1, strlen(p + 1), 0, 1 << 20, &u->db)) {
    snprintf(why, wn, "'%s': after the host only /DB (a database number)", text);
    return -1;
  }
  return 0;
}

void
coil_remote_redact(const char *text, char *out, size_t n)
{
  const char *at = strncmp(text, "redis://", 8) == 0 ? strrchr(text, '@') : NULL;
  if (!at) {
    snprintf(out, n, "%s", text);
    return;
  }
  const char *colon = memchr(text + 8, ':', (size_t)(at - text - 8));
  const char *cut = colon ? colon + 1 : text + 8;
  snprintf(out, n, "%.*s****%s", (int)(cut - text), text, at);
}

/* ---- the configuration ---- */

void
coil_cache_remote_from_config(const coil_config *c, coil_cache_remote *out)
{
  memset(out, 0, sizeof *out);
  out->url = coil_config_get(c, "cache.remote");
  out->key_file = coil_config_get(c, "cache.remote_key_file");
  out->prefix = coil_config_get(c, "cache.remote_prefix");
  out->timeout_ms = atoi(coil_config_get(c, "cache.remote_timeout_ms"));
  out->max_entry = strtoull(coil_config_get(c, "cache.remote_max_entry"), NULL, 10);
  out->ttl = atol(coil_config_get(c, "cache.remote_ttl"));
  out->publish = coil_config_get_bool(c, "cache.remote_publish");
}

/* ---- notes and the back-off ---- */

/* The back-off and the outage note are kept per remote (a host may hold sessions configured
 * with different servers: one down must not silence the others), in a few slots named by a
 * hash of the URL; more remotes than slots share them, which costs at worst a skipped lookup. */
enum { REMOTE_SLOTS = 8 };
typedef struct remote_state {
  uint64_t url_hash;   /* 0: free */
  int64_t down_until;  /* CLOCK_MONOTONIC ms before which this remote is skipped */
  bool noted_outage;   /* a note was written for the current outage */
} remote_state;
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static remote_state states[REMOTE_SLOTS];
static atomic_bool noted_setup; /* a note was written about the key file or the URL */

static double
now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void
coil_remote_reset(void)
{
  pthread_mutex_lock(&state_lock);
  memset(states, 0, sizeof states);
  pthread_mutex_unlock(&state_lock);
  atomic_store(&noted_setup, false);
}

/* This remote's slot (state_lock held): its own, else a free one, else the one its hash names. */
static remote_state *
state_of(const char *url)
{
  uint64_t h = XXH3_64bits(url, strlen(url));
  h += h == 0; /* 0 marks a free slot */
  remote_state *free_one = NULL;
  for (int i = 0; i < REMOTE_SLOTS; i++) {
    if (states[i].url_hash == h)
      return &states[i];
    if (!free_one && states[i].url_hash == 0)
      free_one = &states[i];
  }
  remote_state *s = free_one ? free_one : &states[h % REMOTE_SLOTS];
  *s = (remote_state){.url_hash = h};
  return s;
}

static void
note_outage(const coil_cache_remote *r, const char *what, const char *why)
{
  pthread_mutex_lock(&state_lock);
  remote_state *st = state_of(r->url);
  st->down_until = (int64_t)now_ms() + BACKOFF_SECONDS * 1000;
  bool noted = st->noted_outage;
  st->noted_outage = true;
  pthread_mutex_unlock(&state_lock);
  if (noted)
    return;
  char url[512];
  coil_remote_redact(r->url, url, sizeof url);
  fprintf(stderr, "coil: note: remote cache %s: %s: %s; %s, and the remote is not asked again for %d s\n", url,
          what, why, strcmp(what, "publish") == 0 ? "the entry stays in the local cache" : "compiling locally",
          BACKOFF_SECONDS);
}

static bool
in_backoff(const coil_cache_remote *r)
{
  pthread_mutex_lock(&state_lock);
  bool down = (int64_t)now_ms() < state_of(r->url)->down_until;
  pthread_mutex_unlock(&state_lock);
  return down;
}

static void
healthy(const coil_cache_remote *r)
{
  pthread_mutex_lock(&state_lock);
  state_of(r->url)->noted_outage = false;
  pthread_mutex_unlock(&state_lock);
}

/* ---- the team key ---- */

/* Reads [cache] remote_key_file: 64 hex digits (an optional newline), a regular file of this
 * user's or root's that others cannot read and its group cannot write. */
static int
read_team_key(const char *path, unsigned char key[KEY_BYTES], char *why, size_t wn)
{
  if (!path || !*path) {
    snprintf(why, wn, "[cache] remote_key_file is not set (every entry is authenticated with the team's "
                      "key: 64 hex digits, e.g. from 'openssl rand -hex 32')");
    return -1;
  }
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(why, wn, "remote_key_file %s: %s", path, coil_trust_open_error(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  char text[132];
  ssize_t n = -1;
  if (!S_ISREG(st.st_mode))
    snprintf(why, wn, "remote_key_file %s: not a regular file", path);
  else if (st.st_uid != geteuid() && st.st_uid != 0)
    snprintf(why, wn, "remote_key_file %s: owned by another user (uid %ld)", path, (long)st.st_uid);
  else if (st.st_mode & 027)
    snprintf(why, wn, "remote_key_file %s: others may read it or its group may write it (mode %03o): "
                      "chmod 600 it", path, (unsigned)(st.st_mode & 0777));
  else if ((n = read(fd, text, sizeof text - 1)) < 0)
    snprintf(why, wn, "remote_key_file %s: cannot read: %s", path, strerror(errno));
  close(fd);
  if (n < 0)
    return -1;
  text[n] = 0;
  while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
    text[--n] = 0;
  size_t got = 0;
  if (n != 2 * KEY_BYTES || sodium_hex2bin(key, KEY_BYTES, text, (size_t)n, NULL, &got, NULL) != 0 ||
      got != KEY_BYTES) {
    sodium_memzero(text, sizeof text);
    snprintf(why, wn, "remote_key_file %s: expected 64 hex digits (32 bytes; 'openssl rand -hex 32')", path);
    return -1;
  }
  sodium_memzero(text, sizeof text);
  return 0;
}

/* The remote as set up for one operation: the URL parsed and the key read. false (noted once
 * a process) when the configuration cannot be used. */
typedef struct remote_setup {
  coil_remote_url url;
  unsigned char key[KEY_BYTES];
  unsigned char key_id[8];
} remote_setup;

static bool
set_up(const coil_cache_remote *r, remote_setup *s)
{
  if (!r || !r->url || !*r->url)
    return false;
  char why[512];
  if (coil_remote_parse_url(r->url, &s->url, why, sizeof why) == 0 &&
      read_team_key(r->key_file, s->key, why, sizeof why) == 0) {
    crypto_generichash(s->key_id, sizeof s->key_id, (const unsigned char *)"coil key id 1", 13, s->key, KEY_BYTES);
    return true;
  }
  if (!atomic_exchange(&noted_setup, true))
    fprintf(stderr, "coil: note: the remote cache is off: %s\n", why);
  return false;
}

static void
set_down(remote_setup *s)
{
  sodium_memzero(s, sizeof *s);
}

/* ---- Redis under a deadline ---- */

typedef struct conn {
  redisContext *c;
  double deadline;   /* now_ms() past which the operation has failed */
  int timeout_ms;
  uint64_t max_reply; /* bytes a reply may hold buffered; 0: 64 KiB (set after connect_to) */
  char err[256];     /* why it failed */
} conn;

/* Waits until fd is ready for ev or the deadline passes. */
static int
wait_for(conn *k, short ev)
{
  for (;;) {
    double left = k->deadline - now_ms();
    if (left <= 0) {
      snprintf(k->err, sizeof k->err, "no answer within %d ms (remote_timeout_ms)", k->timeout_ms);
      return -1;
    }
    struct pollfd p = {.fd = k->c->fd, .events = ev};
    int n = poll(&p, 1, (int)left + 1);
    if (n > 0)
      return 0;
    if (n < 0 && errno != EINTR) {
      snprintf(k->err, sizeof k->err, "poll: %s", strerror(errno));
      return -1;
    }
  }
}

static void
context_error(conn *k)
{
  snprintf(k->err, sizeof k->err, "%s", k->c->errstr[0] ? k->c->errstr : "the connection failed");
  if (k->c->err == REDIS_ERR_EOF)
    snprintf(k->err, sizeof k->err, "the server closed the connection");
}

/* One write of the output buffer with SIGPIPE held off for this thread, and a SIGPIPE the write
 * raised taken back (hiredis writes with write(2), and a server gone mid-publish would end the
 * host process otherwise; libcoil leaves the host's signal handling alone). */
static int
write_some(redisContext *c, int *done)
{
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  bool was = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  int rc = redisBufferWrite(c, done);
  if (!was && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
    struct timespec zero = {0};
    while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
      ;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* Sends one command and waits for its reply (NULL on failure: k->err). */
static redisReply *
call(conn *k, int argc, const char **argv, const size_t *len)
{
  if (redisAppendCommandArgv(k->c, argc, argv, len) != REDIS_OK) {
    context_error(k);
    return NULL;
  }
  for (int done = 0; !done;) {
    if (write_some(k->c, &done) != REDIS_OK) {
      context_error(k);
      return NULL;
    }
    if (!done && wait_for(k, POLLOUT))
      return NULL;
  }
  for (;;) {
    void *reply = NULL;
    if (redisGetReply(k->c, &reply) != REDIS_OK) {
      context_error(k);
      return NULL;
    }
    if (reply)
      return reply;
    if (wait_for(k, POLLIN))
      return NULL;
    if (redisBufferRead(k->c) != REDIS_OK) {
      context_error(k);
      return NULL;
    }
    /* hiredis keeps a bulk reply in its buffer until all of it has come: a server announcing
     * (or sending) more than an entry may hold is cut off here, not after gigabytes. */
    uint64_t limit = k->max_reply ? k->max_reply : 64 * 1024;
    if (k->c->reader->len - k->c->reader->pos > limit) {
      snprintf(k->err, sizeof k->err, "the reply is over %" PRIu64 " bytes (remote_max_entry and its header)", limit);
      return NULL;
    }
  }
}

static void
hang_up(conn *k)
{
  if (k->c)
    redisFree(k->c);
  k->c = NULL;
}

/* Connects (and AUTH, SELECT) under the deadline of timeout_ms from now. */
static int
connect_to(conn *k, const coil_remote_url *u, int timeout_ms)
{
  memset(k, 0, sizeof *k);
  k->timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
  k->deadline = now_ms() + k->timeout_ms;
  k->c = u->unix_socket ? redisConnectUnixNonBlock(u->path) : redisConnectNonBlock(u->host, u->port);
  if (!k->c)
    abort(); /* out of memory: the one exit coil.h allows */
  if (k->c->err) {
    context_error(k);
    hang_up(k);
    return -1;
  }
  fcntl(k->c->fd, F_SETFD, FD_CLOEXEC); /* hiredis 0.14 opens it without: keep it from compilers we spawn */
  if (wait_for(k, POLLOUT)) {
    hang_up(k);
    return -1;
  }
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  if (getsockopt(k->c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr) {
    snprintf(k->err, sizeof k->err, "cannot connect: %s", strerror(soerr ? soerr : errno));
    hang_up(k);
    return -1;
  }
  if (u->password[0]) {
    const char *argv[3] = {"AUTH", u->user[0] ? u->user : u->password, u->password};
    size_t len[3] = {4, strlen(argv[1]), strlen(u->password)};
    redisReply *r = call(k, u->user[0] ? 3 : 2, argv, len);
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (r && !ok)
      snprintf(k->err, sizeof k->err, "AUTH refused: %.*s", r->type == REDIS_REPLY_ERROR ? (int)r->len : 0,
               r->type == REDIS_REPLY_ERROR ? r->str : "");
    if (r)
      freeReplyObject(r);
    if (!ok) {
      hang_up(k);
      return -1;
    }
  }
  if (u->db) {
    char db[16];
    snprintf(db, sizeof db, "%d", u->db);
    const char *argv[2] = {"SELECT", db};
    size_t len[2] = {6, strlen(db)};
    redisReply *r = call(k, 2, argv, len);
    bool ok = r && r->type == REDIS_REPLY_STATUS;
    if (r && !ok)
      snprintf(k->err, sizeof k->err, "SELECT %d refused: %.*s", u->db,
               r->type == REDIS_REPLY_ERROR ? (int)r->len : 0, r->type == REDIS_REPLY_ERROR ? r->str : "");
    if (r)
      freeReplyObject(r);
    if (!ok) {
      hang_up(k);
      return -1;
    }
  }
  return 0;
}

static void
entry_key(const coil_cache_remote *r, const char *key, char *out, size_t n)
{
  snprintf(out, n, "%s:v1:e:%s", r->prefix && *r->prefix ? r->prefix : "coil", key);
}

/* ---- the blob ---- */

typedef struct blob {
  unsigned char *p;
  size_t n, cap;
} blob;

static void
put_bytes(blob *b, const void *s, size_t n)
{
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2 + 4096;
    b->p = realloc(b->p, b->cap);
    if (!b->p)
      abort();
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
}

static void
put_le(blob *b, uint64_t v, int bytes)
{
  unsigned char s[8];
  for (int i = 0; i < bytes; i++)
    s[i] = (unsigned char)(v >> (8 * i));
  put_bytes(b, s, (size_t)bytes);
}

static uint64_t
get_le(const unsigned char *s, int bytes)
{
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++)
    v |= (uint64_t)s[i] << (8 * i);
  return v;
}

static void
blob_mac(const unsigned char *p, size_t n, const unsigned char *key, unsigned char out[BLOB_MAC])
{
  crypto_generichash_state st;
  crypto_generichash_init(&st, key, KEY_BYTES, BLOB_MAC);
  crypto_generichash_update(&st, (const unsigned char *)"coil remote entry 1", 19);
  crypto_generichash_update(&st, p, n);
  crypto_generichash_final(&st, out, BLOB_MAC);
}

/* Reads the file rel of the entry (a regular file, no symlink followed) into b. */
static int
pack_file(int entry_fd, const char *rel, uint64_t limit, blob *b, char *why, size_t wn)
{
  int fd = coil_trust_open_beneath(entry_fd, rel, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(why, wn, "%s: cannot read it: %s", rel, fd < 0 ? coil_trust_open_error(errno) : "not a file");
    if (fd >= 0)
      close(fd);
    return -1;
  }
  if ((uint64_t)st.st_size > limit) {
    close(fd);
    snprintf(why, wn, "larger than remote_max_entry (%" PRIu64 " bytes)", limit);
    return -1;
  }
  size_t plen = strlen(rel);
  put_le(b, plen, 4);
  put_bytes(b, rel, plen);
  unsigned char mode = (st.st_mode & 0100) ? 1 : 0;
  put_bytes(b, &mode, 1);
  put_le(b, (uint64_t)st.st_size, 8);
  size_t at = b->n;
  char chunk[65536];
  ssize_t got;
  uint64_t total = 0;
  while ((got = read(fd, chunk, sizeof chunk)) > 0) {
    put_bytes(b, chunk, (size_t)got);
    total += (uint64_t)got;
  }
  close(fd);
  if (got < 0 || total != (uint64_t)st.st_size) {
    b->n = at;
    snprintf(why, wn, "%s: changed size while being read", rel);
    return -1;
  }
  return 0;
}

/* The blob of the entry at entry_fd. */
static int
pack(const remote_setup *s, const coil_cache_remote *r, int entry_fd, const char *dir, const char *key,
     const char *plugin, const char *version, blob *b, char *why, size_t wn)
{
  coil_file_list files = {0};
  coil_diag d = {{0}};
  if (coil_trust_list_files(entry_fd, dir, "", NULL, &files, &d)) {
    snprintf(why, wn, "%.500s", d.msg);
    return -1;
  }
  qsort(files.files, (size_t)files.n, sizeof *files.files, coil_trust_by_path);
  char header[1024];
  int hn = snprintf(header, sizeof header, "plugin %s\nversion %s\ncoil %s\nfiles %d\n", plugin, version,
                    COIL_VERSION_STRING, files.n + 1);
  put_bytes(b, BLOB_MAGIC, 8);
  put_bytes(b, s->key_id, 8);
  put_bytes(b, key, 32);
  put_le(b, (uint64_t)hn, 4);
  put_bytes(b, header, (size_t)hn);
  int rc = 0;
  for (int i = 0; rc == 0 && i <= files.n; i++) {
    rc = pack_file(entry_fd, i < files.n ? files.files[i].path : COIL_ARTIFACT_HOST_MANIFEST, r->max_entry, b, why, wn);
    if (rc == 0 && b->n + BLOB_MAC > r->max_entry) {
      snprintf(why, wn, "larger than remote_max_entry (%" PRIu64 " bytes)", r->max_entry);
      rc = -1;
    }
  }
  coil_trust_files_free(&files);
  if (rc == 0) {
    unsigned char mac[BLOB_MAC];
    blob_mac(b->p, b->n, s->key, mac);
    put_bytes(b, mac, BLOB_MAC);
  }
  return rc;
}

/* A path of the blob must stay inside the entry and not be the local seal. */
static bool
blob_path_ok(const char *p)
{
  if (!*p || p[0] == '/' || strcmp(p, COIL_ARTIFACT_MAC) == 0)
    return false;
  for (const char *s = p; *s;) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.') || n > 255)
      return false;
    s += n + (e != NULL);
  }
  return true;
}

/* The value of "NAME VALUE" in the header text, into out. */
static bool
header_field(const char *h, size_t hn, const char *name, char *out, size_t n)
{
  size_t nl = strlen(name);
  for (const char *s = h, *end = h + hn; s < end;) {
    const char *eol = memchr(s, '\n', (size_t)(end - s));
    if (!eol)
      return false;
    if ((size_t)(eol - s) > nl && memcmp(s, name, nl) == 0 && s[nl] == ' ') {
      size_t vn = (size_t)(eol - s) - nl - 1;
      if (vn >= n)
        return false;
      memcpy(out, s + nl + 1, vn);
      out[vn] = 0;
      return true;
    }
    s = eol + 1;
  }
  return false;
}

/* Checks the blob (why: the reason it is refused), then writes its files into the new
 * directory tmp under root. */
static int
check_and_unpack(const remote_setup *s, const unsigned char *p, size_t n, const char *key, const char *plugin,
                 const char *version, int root, const char *tmp, const unsigned char *local_mac_key, char *why,
                 size_t wn)
{
  if (n < BLOB_FIXED + BLOB_MAC || memcmp(p, BLOB_MAGIC, 8) != 0) {
    snprintf(why, wn, "not a coil entry of this format (%zu bytes)", n);
    return -1;
  }
  if (memcmp(p + 8, s->key_id, 8) != 0) {
    snprintf(why, wn, "published with another team key (remote_key_file)");
    return -1;
  }
  unsigned char mac[BLOB_MAC];
  blob_mac(p, n - BLOB_MAC, s->key, mac);
  if (sodium_memcmp(mac, p + n - BLOB_MAC, BLOB_MAC) != 0) {
    snprintf(why, wn, "its keyed hash does not match (edited, truncated, or not written by a holder of the team key)");
    return -1;
  }
  /* authenticated from here: what follows is a holder of the key's, checked for sense anyway */
  if (memcmp(p + 16, key, 32) != 0) {
    snprintf(why, wn, "it records another cache key (%.32s)", (const char *)p + 16);
    return -1;
  }
  size_t end = n - BLOB_MAC, hn = (size_t)get_le(p + 48, 4), at = BLOB_FIXED + hn;
  char got_plugin[128], got_version[128], count[16];
  int nfiles = 0;
  if (hn > end - BLOB_FIXED || !header_field((const char *)p + BLOB_FIXED, hn, "plugin", got_plugin, sizeof got_plugin) ||
      !header_field((const char *)p + BLOB_FIXED, hn, "version", got_version, sizeof got_version) ||
      !header_field((const char *)p + BLOB_FIXED, hn, "files", count, sizeof count) ||
      (nfiles = atoi(count)) < 1 || nfiles > BLOB_MAX_FILES) {
    snprintf(why, wn, "its header is malformed");
    return -1;
  }
  if (strcmp(got_plugin, plugin) != 0 || strcmp(got_version, version) != 0) {
    snprintf(why, wn, "it was compiled by plugin %s %s, not %s %s", got_plugin, got_version, plugin, version);
    return -1;
  }
  if (mkdirat(root, tmp, 0700) != 0) {
    snprintf(why, wn, "cannot create %s in the local cache: %s", tmp, strerror(errno));
    return -1;
  }
  int dfd = openat(root, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int rc = dfd < 0 ? -1 : 0;
  if (rc)
    snprintf(why, wn, "cannot open %s: %s", tmp, strerror(errno));
  bool manifest = false;
  for (int i = 0; rc == 0 && i < nfiles; i++) {
    if (end - at < 4 + 1 + 8) {
      rc = -1;
      break;
    }
    size_t pl = (size_t)get_le(p + at, 4);
    if (pl == 0 || pl > 4096 || end - at - 4 < pl + 1 + 8) {
      rc = -1;
      break;
    }
    char path[4097];
    memcpy(path, p + at + 4, pl);
    path[pl] = 0;
    unsigned char mode = p[at + 4 + pl];
    uint64_t size = get_le(p + at + 4 + pl + 1, 8);
    at += 4 + pl + 1 + 8;
    if (strlen(path) != pl || !blob_path_ok(path) || mode > 1 || size > end - at) {
      rc = -1;
      break;
    }
    manifest |= strcmp(path, COIL_ARTIFACT_HOST_MANIFEST) == 0;
    for (char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) { /* its directories */
      *slash = 0;
      if (mkdirat(dfd, path, 0700) != 0 && errno != EEXIST)
        rc = -1;
      *slash = '/';
    }
    int fd = rc ? -1 : openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      if (rc == 0)
        snprintf(why, wn, "cannot write %s (twice in the entry?): %s", path, strerror(errno));
      rc = -2;
      break;
    }
    for (uint64_t w = 0; rc == 0 && w < size;) {
      ssize_t k = write(fd, p + at + w, (size_t)(size - w));
      if (k <= 0) {
        snprintf(why, wn, "cannot write %s: %s", path, k < 0 ? strerror(errno) : "no progress");
        rc = -2;
      } else {
        w += (uint64_t)k;
      }
    }
    if (rc == 0 && fchmod(fd, mode ? 0700 : 0600) != 0) {
      snprintf(why, wn, "cannot set the mode of %s: %s", path, strerror(errno));
      rc = -2;
    }
    close(fd);
    at += size;
  }
  if (rc == -1 && !why[0])
    snprintf(why, wn, "its file list is malformed");
  if (rc == 0 && (at != end || !manifest)) {
    snprintf(why, wn, at != end ? "bytes after its last file" : "it holds no %s", COIL_ARTIFACT_HOST_MANIFEST);
    rc = -1;
  }
  if (rc == 0) {
    coil_diag d = {{0}};
    if (coil_artifact_seal_at(dfd, tmp, local_mac_key, &d)) { /* coil.mac with this user's key */
      snprintf(why, wn, "%.500s", d.msg);
      rc = -1;
    }
  }
  if (dfd >= 0)
    close(dfd);
  return rc ? -1 : 0;
}

/* ---- fetch and publish ---- */

coil_remote_status
coil_remote_fetch(const coil_cache_remote *r, int root, const char *cache_dir, const char *key, const char *plugin,
                  const char *version, const unsigned char *local_mac_key, coil_cache_counts *counts)
{
  coil_cache_counts none = {0};
  counts = counts ? counts : &none;
  remote_setup s;
  if (!set_up(r, &s))
    return COIL_REMOTE_ABSENT;
  if (in_backoff(r)) {
    counts->remote_skipped++;
    set_down(&s);
    return COIL_REMOTE_ABSENT;
  }
  double t0 = now_ms();
  coil_remote_status st = COIL_REMOTE_ABSENT;
  conn k;
  char name[160], last[32];
  entry_key(r, key, name, sizeof name);
  snprintf(last, sizeof last, "%" PRIu64, r->max_entry); /* GETRANGE's end is inclusive: max + 1 bytes at most */
  redisReply *rep = NULL;
  if (connect_to(&k, &s.url, r->timeout_ms) == 0) {
    k.max_reply = r->max_entry + 1024; /* GETRANGE answers at most max_entry + 1 bytes, and "$N\r\n" */
    const char *argv[4] = {"GETRANGE", name, "0", last};
    size_t len[4] = {8, strlen(name), 1, strlen(last)};
    rep = call(&k, 4, argv, len);
  }
  if (!rep) {
    counts->remote_errors++;
    note_outage(r, "fetch", k.err);
  } else if (rep->type == REDIS_REPLY_ERROR) {
    counts->remote_errors++;
    char msg[256];
    snprintf(msg, sizeof msg, "GETRANGE answered: %.*s", (int)(rep->len < 200 ? rep->len : 200), rep->str);
    note_outage(r, "fetch", msg);
  } else if (rep->type == REDIS_REPLY_NIL || (rep->type == REDIS_REPLY_STRING && rep->len == 0)) {
    counts->remote_misses++; /* GETRANGE of a missing key is "" */
    healthy(r);
  } else {
    healthy(r);
    char why[512] = "";
    char tmp[96];
    snprintf(tmp, sizeof tmp, ".%s.tmp-%ld-%08x", key, (long)getpid(), randombytes_random());
    int rc = -1;
    if (rep->type != REDIS_REPLY_STRING)
      snprintf(why, sizeof why, "not a string (reply type %d)", rep->type);
    else if ((uint64_t)rep->len > r->max_entry)
      snprintf(why, sizeof why, "larger than remote_max_entry (%" PRIu64 " bytes)", r->max_entry);
    else
      rc = check_and_unpack(&s, (const unsigned char *)rep->str, rep->len, key, plugin, version, root, tmp,
                            local_mac_key, why, sizeof why);
    if (rc == 0 && renameat(root, tmp, root, key) != 0 && errno != EEXIST && errno != ENOTEMPTY) {
      snprintf(why, sizeof why, "cannot install it in %s: %s", cache_dir, strerror(errno));
      rc = -1;
    }
    if (rc == 0) { /* ours, or a concurrent writer's that was in place first: checked next either way */
      st = COIL_REMOTE_INSTALLED;
      counts->remote_hits++;
      counts->fetch_ms = now_ms() - t0;
    } else {
      counts->remote_rejected++;
      fprintf(stderr, "coil: note: remote cache: entry %s ignored: %s; compiling locally\n", key, why);
    }
    coil_artifact_remove_at(root, tmp); /* after a rename: nothing is there */
  }
  if (rep)
    freeReplyObject(rep);
  hang_up(&k);
  set_down(&s);
  counts->remote_ms += now_ms() - t0;
  return st;
}

void
coil_remote_publish(const coil_cache_remote *r, int entry_fd, const char *dir, const char *key, const char *plugin,
                    const char *version, coil_cache_counts *counts)
{
  coil_cache_counts none = {0};
  counts = counts ? counts : &none;
  remote_setup s;
  if (!r || !r->publish || !set_up(r, &s))
    return;
  if (in_backoff(r)) {
    counts->remote_skipped++;
    set_down(&s);
    return;
  }
  double t0 = now_ms();
  char name[160];
  entry_key(r, key, name, sizeof name);
  conn k = {0};
  blob b = {0};
  char why[512] = "";
  redisReply *rep = NULL;
  bool up = connect_to(&k, &s.url, r->timeout_ms) == 0;
  if (up) { /* most losers of a race stop here, before packing and sending the entry */
    const char *argv[2] = {"EXISTS", name};
    size_t len[2] = {6, strlen(name)};
    rep = call(&k, 2, argv, len);
  }
  if (rep && rep->type == REDIS_REPLY_INTEGER && rep->integer > 0) {
    counts->publish_raced++;
    healthy(r);
  } else if (rep && rep->type == REDIS_REPLY_INTEGER) {
    freeReplyObject(rep);
    rep = NULL;
    if (pack(&s, r, entry_fd, dir, key, plugin, version, &b, why, sizeof why)) {
      fprintf(stderr, "coil: note: remote cache: entry %s not published: %s\n", key, why);
    } else {
      char ttl[32];
      snprintf(ttl, sizeof ttl, "%ld", r->ttl);
      const char *argv[6] = {"SET", name, (const char *)b.p, "NX", "EX", ttl};
      size_t len[6] = {3, strlen(name), b.n, 2, 2, strlen(ttl)};
      rep = call(&k, r->ttl > 0 ? 6 : 4, argv, len);
      if (rep && rep->type == REDIS_REPLY_STATUS) {
        counts->published++;
        healthy(r);
      } else if (rep && rep->type == REDIS_REPLY_NIL) {
        counts->publish_raced++;
        healthy(r);
      } else if (rep) {
        counts->remote_errors++;
        snprintf(why, sizeof why, "SET answered: %.*s", rep->type == REDIS_REPLY_ERROR ? (int)(rep->len < 200 ? rep->len : 200) : 0,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "");
        note_outage(r, "publish", why);
      }
    }
  } else if (rep) {
    snprintf(why, sizeof why, "EXISTS answered: %.*s", rep->type == REDIS_REPLY_ERROR ? (int)(rep->len < 200 ? rep->len : 200) : 0,
             rep->type == REDIS_REPLY_ERROR ? rep->str : "");
    counts->remote_errors++;
    note_outage(r, "publish", why);
  }
  if (!rep && (!up || k.err[0])) {
    counts->remote_errors++;
    note_outage(r, "publish", k.err);
  }
  if (rep)
    freeReplyObject(rep);
  free(b.p);
  hang_up(&k);
  set_down(&s);
  counts->remote_ms += now_ms() - t0;
}
