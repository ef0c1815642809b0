/* cache_remote.h — the compile cache shared through Redis (core-internal; cache.c calls it):
 * [cache] remote = redis://... in the configuration (docs/config.md). A miss in the local cache
 * looks the key up in Redis before compiling; a compile publishes its entry there. An entry is
 * one Redis string (the "blob": its files and a keyed BLAKE2b over all of it, made with the
 * team's key, [cache] remote_key_file), checked before any of it is written to the local cache,
 * then sealed with the local cache's own key and checked again as a local entry is. Redis
 * unreachable, slow or answering garbage costs at most remote_timeout_ms an operation, one note
 * an outage, and 30 s without that remote; never a failed run (docs/reliability.md, "The remote
 * cache").
 *
 * One connection per operation (hiredis contexts are not thread-safe; a loopback or LAN
 * connect is well under a millisecond), driven without blocking under one deadline: hiredis
 * 0.14's own timeouts bound each read and write, not the operation. */
#ifndef COIL_CACHE_REMOTE_H
#define COIL_CACHE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "coil/base.h"

/* A parsed [cache] remote: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or unix:///PATH[?db=N]. */
typedef struct coil_remote_url {
  bool unix_socket;
  char host[256];        /* an IP address or a name (resolved without a deadline: use an IP) */
  int port;              /* default 6379 */
  char path[108];        /* unix_socket */
  int db;                /* SELECT'ed when not 0 */
  char user[64], password[256]; /* AUTH when a password is given (with USER: Redis 6 ACLs) */
} coil_remote_url;

/* 0, or -1 with the reason in why ("expected redis://HOST[:PORT][/DB] or unix:///PATH"). */
int coil_remote_parse_url(const char *text, coil_remote_url *out, char *why, size_t wn);
/* The URL as text with the password replaced by "****" (for notes and explain). */
void coil_remote_redact(const char *text, char *out, size_t n);

/* The [cache] options that set the remote up (strings borrowed from the configuration). */
typedef struct coil_cache_remote {
  const char *url;        /* "" or NULL: no remote */
  const char *key_file;   /* the team's key: 64 hex digits (required with url) */
  int timeout_ms;         /* one whole operation: connect, AUTH/SELECT, the command */
  uint64_t max_entry;     /* bytes: larger entries are neither published nor loaded */
  const char *prefix;     /* of every Redis key: PREFIX:v1:e:KEY */
  long ttl;               /* seconds, EX on publish; 0: none */
  bool publish;           /* false: a read-only client */
} coil_cache_remote;

/* What the remote did over the calls that counted into it (add up). */
typedef struct coil_cache_counts {
  int local_hits;         /* entries found in the local cache */
  int remote_hits;        /* fetched from Redis, checked and installed locally */
  int remote_misses;      /* Redis had no entry */
  int remote_rejected;    /* an entry that failed its check (keyed hash, size, format) */
  int remote_errors;      /* Redis unreachable, slow, or answering an error */
  int remote_skipped;     /* not asked: inside the back-off after an error */
  int published;          /* this process stored the entry (SET NX answered OK) */
  int publish_raced;      /* another process had published it first */
  double remote_ms;       /* time spent in fetches and publishes */
  double fetch_ms;        /* time of the last fetch that hit (connect to installed) */
} coil_cache_counts;

struct coil_config;
/* The [cache] options of c (c must outlive *out). */
void coil_cache_remote_from_config(const struct coil_config *c, coil_cache_remote *out);

/* What a fetch found. */
typedef enum coil_remote_status {
  COIL_REMOTE_INSTALLED, /* checked, written to the local cache under `tmp_name` and renamed to key */
  COIL_REMOTE_ABSENT,    /* no entry (or the remote is off, in back-off, or failed: noted) */
} coil_remote_status;

/* Looks the entry `key` up and, when it passes its check, writes it as a local entry into the
 * directory root (cache_dir in messages), sealed with local_mac_key; the caller then opens and
 * checks it like any entry. plugin and version must match the entry's header. Never fails the
 * caller: every problem is a note (once an outage) and COIL_REMOTE_ABSENT. */
coil_remote_status coil_remote_fetch(const coil_cache_remote *r, int root, const char *cache_dir,
                                     const char *key, const char *plugin, const char *version,
                                     const unsigned char *local_mac_key, coil_cache_counts *counts);

/* Publishes the checked local entry (entry_fd, dir in messages) under key when no entry is
 * there yet. Problems are notes, never errors. */
void coil_remote_publish(const coil_cache_remote *r, int entry_fd, const char *dir, const char *key,
                         const char *plugin, const char *version, coil_cache_counts *counts);

/* Forgets the back-off and the notes of earlier outages (tests). */
void coil_remote_reset(void);

#endif
