/* rehash.h — the attack on unkeyed hashes, for the tests of the cache and of artifacts: after a
 * file of an artifact is edited, recompute what coil.json records (each file's bytes and
 * XXH3-128, and the content hash over the list; artifact.c's formulas) so that every unkeyed
 * check passes again. Only what the key (coil.mac) or the cross-check of coil.wir with the
 * plugin's program.wir catches is left. Included by one test file each (static functions). */
#ifndef COIL_TEST_REHASH_H
#define COIL_TEST_REHASH_H

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static char *
rehash_slurp(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  char *buf = malloc(1 << 22);
  cr_assert_not_null(buf);
  *len = fread(buf, 1, (1 << 22) - 1, f);
  buf[*len] = 0;
  fclose(f);
  return buf;
}

static void
rehash_hex(XXH128_hash_t h, char out[33])
{
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
}

/* Rewrites dir/coil.json so that it records the files of dir as they are now. */
static void
rehash_artifact(const char *dir)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/coil.json", dir);
  size_t len;
  char *text = rehash_slurp(path, &len);
  cJSON *m = cJSON_Parse(text);
  free(text);
  cr_assert_not_null(m);
  cJSON *files = cJSON_GetObjectItemCaseSensitive(m, "files");
  XXH3_state_t *all = XXH3_createState();
  XXH3_128bits_reset(all);
  cJSON *e;
  cJSON_ArrayForEach(e, files) {
    const char *rel = cJSON_GetObjectItemCaseSensitive(e, "path")->valuestring;
    char file[1200], hash[33];
    snprintf(file, sizeof file, "%s/%s", dir, rel);
    size_t n;
    char *body = rehash_slurp(file, &n);
    rehash_hex(XXH3_128bits(body, n), hash);
    free(body);
    cJSON_ReplaceItemInObjectCaseSensitive(e, "bytes", cJSON_CreateNumber((double)n));
    cJSON_ReplaceItemInObjectCaseSensitive(e, "xxh3_128", cJSON_CreateString(hash));
    unsigned char size[8];
    for (int k = 0; k < 8; k++)
      size[k] = (unsigned char)((uint64_t)n >> (8 * k));
    XXH3_128bits_update(all, rel, strlen(rel) + 1);
    XXH3_128bits_update(all, size, sizeof size);
    XXH3_128bits_update(all, hash, 32);
  }
  char content[33];
  rehash_hex(XXH3_128bits_digest(all), content);
  XXH3_freeState(all);
  cJSON_ReplaceItemInObjectCaseSensitive(m, "content_hash", cJSON_CreateString(content));
  char *out = cJSON_Print(m);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  fprintf(f, "%s\n", out);
  fclose(f);
  cJSON_free(out);
  cJSON_Delete(m);
}

#endif
