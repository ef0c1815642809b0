/* artifact_trust.h — the trust boundary of artifact directories (core-internal; used by
 * artifact.c and cache.c): opening a file or directory beneath an artifact's directory
 * descriptor without following symlinks, checking what was opened against a
 * coil_artifact_trust (artifact.h: owner and mode), listing and hashing an artifact's files, the
 * keyed hash of a cache entry (coil.mac) and the cache's key file. Every check applies to the
 * descriptor that is then read, never to a name that could be swapped after the check.
 * Fallible functions return -1 (or NULL) with a message in *d. */
#ifndef COIL_ARTIFACT_TRUST_H
#define COIL_ARTIFACT_TRUST_H

#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "artifact.h"

/* strdup that aborts on out-of-memory (NULL copies as ""); free with free. */
char *coil_xstrdup(const char *s);
/* "dir/name", malloc'd. */
char *coil_path_join(const char *dir, const char *name);
/* h as 32 lowercase hex digits (its canonical, big-endian bytes) and a NUL. */
void coil_hex128(XXH128_hash_t h, char out[33]);

/* One file of an artifact. */
typedef struct coil_file_entry {
  char *path;            /* relative to the artifact directory, '/'-separated */
  uint64_t bytes;
  char hash[33];         /* XXH3-128, hex */
} coil_file_entry;

typedef struct coil_file_list {
  int n, cap;
  coil_file_entry *files;
} coil_file_list;

/* Whether st (of path, for the message) may be part of an artifact under trust t (NULL: no
 * check, the writer's own temporary directory). */
int coil_trust_check_mode(const struct stat *st, const char *path, const coil_artifact_trust *t,
                          coil_diag *d);
/* Opens rel ('/'-separated, relative) beneath the directory dfd one component at a time with
 * O_NOFOLLOW; the last component with `flags` (plus O_NOFOLLOW). Returns the descriptor, or -1
 * with errno set (ELOOP: a symlink). */
int coil_trust_open_beneath(int dfd, const char *rel, int flags);
/* The reason an open with O_NOFOLLOW failed, in words. */
const char *coil_trust_open_error(int e);
/* Reads the (small, at most limit bytes) file rel beneath dfd (root/rel in messages) without
 * following symlinks, checked against t; NULL with errno set when it cannot (EPERM: t refused
 * it, message in d). */
char *coil_trust_read_text_at(int dfd, const char *root, const char *rel,
                              const coil_artifact_trust *t, size_t limit, size_t *len, coil_diag *d);

void coil_trust_files_free(coil_file_list *l);
/* qsort comparator of coil_file_entry by path. */
int coil_trust_by_path(const void *a, const void *b);
/* Adds every regular file under rel (rel "" for the artifact directory dfd itself, named root
 * in messages) except the top-level coil.json and coil.mac; anything neither a file nor a
 * directory (a symlink, a socket) is an error, and each directory and file must pass t. */
int coil_trust_list_files(int dfd, const char *root, const char *rel, const coil_artifact_trust *t,
                          coil_file_list *out, coil_diag *d);
/* Hashes the file rel beneath dfd (XXH3-128 and size into *f), opened without following
 * symlinks and checked against t; fsyncs it when sync (the writer's durability step); feeds its
 * path, bytes and length to mac when not NULL. */
int coil_trust_hash_file(int dfd, const char *root, const char *rel, bool sync,
                         const coil_artifact_trust *t, crypto_generichash_state *mac,
                         coil_file_entry *f, coil_diag *d);
/* The content hash: XXH3-128 over each file's path, size and hash, in the list's order. */
void coil_trust_content_hash(const coil_file_list *l, char out[33]);

/* Starts the keyed hash of an artifact (coil.mac) under key (COIL_ARTIFACT_MAC_KEY_BYTES). */
void coil_trust_mac_begin(crypto_generichash_state *mac, const unsigned char *key);
/* Ends it with coil.json's text; out: 64 hex digits. */
void coil_trust_mac_end(crypto_generichash_state *mac, const char *manifest, size_t len,
                        char out[65]);

/* Reads the cache's secret key (the file `name` under the directory root, cache_dir in
 * messages: COIL_ARTIFACT_MAC_KEY_BYTES bytes, a regular file of this user's, mode 600), making
 * it on first use from random bytes through a temporary ".key.tmp-PID-..." linked to the name,
 * so that concurrent first uses agree on one key and no reader sees half of one. */
int coil_trust_secret_key(int root, const char *cache_dir, const char *name,
                          unsigned char key[COIL_ARTIFACT_MAC_KEY_BYTES], coil_diag *d);

#endif
