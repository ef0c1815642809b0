/* safetensors.c — reading and writing the huggingface safetensors format: an 8-byte
 * little-endian header length N, N bytes of UTF-8 JSON mapping each tensor name to
 * {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the byte after the
 * header, optional "__metadata__" ignored), then the raw little-endian tensor data.
 *
 * The reader treats every file as hostile: each field is checked before it is used, every byte
 * range is checked against the buffer before it is touched, and the first problem found is
 * reported naming the file, the byte or tensor involved, and what was expected. On any error the
 * output list is left empty. Tensors are added in ascending order of their data offsets, so a
 * file always reads back in one deterministic order whatever the JSON key order was.
 *
 * The writer lays tensors out contiguously in list order, pads the header with spaces to a
 * multiple of 8 bytes (so the data section is 8-byte aligned, as the python writer does), and
 * writes through a temporary file in the target's directory that is renamed over the target, so
 * a failed write never leaves a partial file behind. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "coil/arena.h"
#include "coil/coil.h"

/* Tensor bytes are copied verbatim between file and memory, so the host must store multi-byte
 * values little-endian as the format does. Every target coil supports is little-endian; a
 * big-endian port would have to byte-swap in copy_data() and write(). */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "coil's safetensors reader assumes a little-endian host"
#endif

/* A header this large is not a tensor file: the biggest real checkpoints have headers of a few
 * MB. The limit keeps a corrupt length from making us allocate and parse gigabytes. */
#define MAX_HEADER_BYTES 100000000u

/* JSON numbers are doubles; integers above 2^53 are not represented exactly, so a size or
 * offset beyond it cannot be trusted. No real file comes near (2^53 bytes is 8 PiB). */
#define MAX_EXACT_INT 9007199254740992.0

/* One tensor entry of the header, validated but not yet loaded. */
typedef struct entry {
  const char *name;            /* points into the parsed cJSON tree */
  coil_dtype dtype;
  int rank;
  int64_t shape[COIL_MAX_RANK];
  uint64_t begin, end;         /* data_offsets, relative to the data section */
  int index;                   /* position in the header: the tie-break that keeps sorts stable */
} entry;

/* ---------------------------------------------------------------- shared helpers ---- */

/* Length of the valid UTF-8 prefix of s[0..n): n when all of it is valid. Rejects overlong
 * forms, surrogates and code points above U+10FFFF, as RFC 3629 requires. */
static size_t
utf8_valid_prefix(const unsigned char *s, size_t n)
{
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the first continuation byte */
    if (c < 0x80)
      len = 1;
    else if (c >= 0xc2 && c <= 0xdf)
      len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      lo = c == 0xe0 ? 0xa0 : 0x80; /* no overlongs */
      hi = c == 0xed ? 0x9f : 0xbf; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      lo = c == 0xf0 ? 0x90 : 0x80;
      hi = c == 0xf4 ? 0x8f : 0xbf; /* nothing above U+10FFFF */
    } else
      return i;
    if (len > n - i)
      return i;
    for (size_t k = 1; k < len; k++) {
      unsigned b = s[i + k];
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xbf))
        return i;
    }
    i += len;
  }
  return n;
}

static int
cmp_name(const void *a, const void *b)
{
  const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Order by data offset; the header position breaks ties so the result is deterministic. */
static int
cmp_offset(const void *a, const void *b)
{
  const entry *x = a, *y = b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* ---------------------------------------------------------------- reading ---- */

/* A JSON number that is an exact integer in [0, 2^53]; anything else is rejected. */
static bool
json_uint(const cJSON *j, uint64_t *v)
{
  if (!cJSON_IsNumber(j))
    return false;
  double x = j->valuedouble;
  if (!isfinite(x) || x < 0 || x > MAX_EXACT_INT || x != floor(x))
    return false;
  *v = (uint64_t)x;
  return true;
}

/* "__metadata__": an object of string to string. Its contents are ignored, but a malformed one
 * means the writer did not follow the format, and the python reader would reject it too. */
static int
check_metadata(const char *what, const cJSON *meta, coil_diag *d)
{
  if (!cJSON_IsObject(meta))
    return coil_diag_set(d, "%s: \"__metadata__\" is not a JSON object of strings", what);
  for (const cJSON *m = meta->child; m; m = m->next)
    if (!cJSON_IsString(m))
      return coil_diag_set(d, "%s: \"__metadata__\" value of key '%.200s' is not a string",
                           what, m->string);
  return 0;
}

/* shape = "[" (uint ("," uint)*)? "]", at most COIL_MAX_RANK entries. */
static int
parse_shape(const char *what, entry *e, const cJSON *shape, coil_diag *d)
{
  if (!cJSON_IsArray(shape))
    return coil_diag_set(d, "%s: tensor '%.200s': \"shape\" is not an array, expected an array "
                         "of non-negative integers", what, e->name);
  int rank = cJSON_GetArraySize(shape);
  if (rank > COIL_MAX_RANK)
    return coil_diag_set(d, "%s: tensor '%.200s': shape has %d dimensions, at most %d are "
                         "supported", what, e->name, rank, COIL_MAX_RANK);
  e->rank = 0;
  for (const cJSON *s = shape->child; s; s = s->next) {
    uint64_t v;
    if (!json_uint(s, &v))
      return coil_diag_set(d, "%s: tensor '%.200s': shape[%d] is not a non-negative integer",
                           what, e->name, e->rank);
    e->shape[e->rank++] = (int64_t)v;
  }
  return 0;
}

/* data_offsets = "[" uint "," uint "]" with begin <= end <= size of the data section. */
static int
parse_offsets(const char *what, entry *e, const cJSON *offs, size_t data_len, coil_diag *d)
{
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 ||
      !json_uint(offs->child, &e->begin) || !json_uint(offs->child->next, &e->end))
    return coil_diag_set(d, "%s: tensor '%.200s': \"data_offsets\" is not an array of two "
                         "non-negative integers [begin, end]", what, e->name);
  if (e->begin > e->end)
    return coil_diag_set(d, "%s: tensor '%.200s': data_offsets [%llu, %llu] have begin after "
                         "end", what, e->name, (unsigned long long)e->begin,
                         (unsigned long long)e->end);
  if (e->end > data_len)
    return coil_diag_set(d, "%s: tensor '%.200s': data_offsets [%llu, %llu] run past the end "
                         "of the data section, which is %zu bytes", what, e->name,
                         (unsigned long long)e->begin, (unsigned long long)e->end, data_len);
  return 0;
}

/* The byte size a shape and dtype need; false when it does not fit in 64 bits. */
static bool
shape_bytes(const entry *e, uint64_t *bytes)
{
  uint64_t n = coil_dtype_size(e->dtype);
  for (int i = 0; i < e->rank; i++)
    if (e->shape[i] == 0) {
      *bytes = 0;
      return true;
    }
  for (int i = 0; i < e->rank; i++) {
    uint64_t s = (uint64_t)e->shape[i];
    if (n > UINT64_MAX / s)
      return false;
    n *= s;
  }
  *bytes = n;
  return true;
}

/* "F32[2, 3]", as messages show a tensor's type. */
static void
type_string(char *buf, size_t size, const entry *e)
{
  int n = snprintf(buf, size, "%s[", coil_dtype_st_name(e->dtype));
  for (int i = 0; i < e->rank && n > 0 && (size_t)n < size; i++)
    n += snprintf(buf + n, size - (size_t)n, i ? ", %lld" : "%lld", (long long)e->shape[i]);
  if (n > 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, "]");
}

/* entry = "{" "dtype": string "," "shape": shape "," "data_offsets": offsets "}"; other keys
 * are ignored, as the python reader ignores them. */
static int
parse_entry(const char *what, entry *e, const cJSON *j, size_t data_len, coil_diag *d)
{
  if (!cJSON_IsObject(j))
    return coil_diag_set(d, "%s: tensor '%.200s': entry is not a JSON object, expected "
                         "{\"dtype\", \"shape\", \"data_offsets\"}", what, e->name);
  const char *keys[] = {"dtype", "shape", "data_offsets"};
  for (int k = 0; k < 3; k++)
    if (!cJSON_GetObjectItemCaseSensitive(j, keys[k]))
      return coil_diag_set(d, "%s: tensor '%.200s': entry has no \"%s\"", what, e->name,
                           keys[k]);

  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
  if (!cJSON_IsString(dt))
    return coil_diag_set(d, "%s: tensor '%.200s': \"dtype\" is not a string", what, e->name);
  int t = coil_dtype_from_st_name(dt->valuestring);
  if (t < 0)
    return coil_diag_set(d, "%s: tensor '%.200s': unknown dtype \"%.100s\", expected one of "
                         "F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL", what, e->name,
                         dt->valuestring);
  e->dtype = (coil_dtype)t;

  if (parse_shape(what, e, cJSON_GetObjectItemCaseSensitive(j, "shape"), d) ||
      parse_offsets(what, e, cJSON_GetObjectItemCaseSensitive(j, "data_offsets"), data_len, d))
    return -1;

  uint64_t need;
  if (!shape_bytes(e, &need))
    return coil_diag_set(d, "%s: tensor '%.200s': shape is too large to address", what,
                         e->name);
  if (e->end - e->begin != need) {
    char ty[32 + COIL_MAX_RANK * 22];
    type_string(ty, sizeof ty, e);
    return coil_diag_set(d, "%s: tensor '%.200s': byte size mismatch: data_offsets [%llu, %llu] "
                         "span %llu bytes, but %s needs %llu bytes", what, e->name,
                         (unsigned long long)e->begin, (unsigned long long)e->end,
                         (unsigned long long)(e->end - e->begin), ty, (unsigned long long)need);
  }
  return 0;
}

/* Two entries with one name: cJSON keeps both, so sort names and compare neighbours. */
static int
check_duplicates(const char *what, entry *es, int n, coil_diag *d)
{
  if (n < 2)
    return 0;
  entry **by_name = coil_xmalloc(sizeof *by_name * (size_t)n);
  for (int i = 0; i < n; i++)
    by_name[i] = &es[i];
  qsort(by_name, (size_t)n, sizeof *by_name, cmp_name);
  int rc = 0;
  for (int i = 1; i < n && !rc; i++)
    if (strcmp(by_name[i - 1]->name, by_name[i]->name) == 0)
      rc = coil_diag_set(d, "%s: duplicate tensor name '%.200s'", what, by_name[i]->name);
  free(by_name);
  return rc;
}

/* es must be sorted by offset. Empty tensors own no bytes, so they overlap nothing. */
static int
check_overlaps(const char *what, const entry *es, int n, coil_diag *d)
{
  const entry *last = NULL; /* the non-empty tensor reaching furthest so far */
  for (int i = 0; i < n; i++) {
    if (es[i].begin == es[i].end)
      continue;
    if (last && es[i].begin < last->end)
      return coil_diag_set(d, "%s: tensors '%.200s' and '%.200s' overlap: data bytes [%llu, "
                           "%llu) and [%llu, %llu)", what, last->name, es[i].name,
                           (unsigned long long)last->begin, (unsigned long long)last->end,
                           (unsigned long long)es[i].begin, (unsigned long long)es[i].end);
    if (!last || es[i].end > last->end)
      last = &es[i];
  }
  return 0;
}

/* Allocates and fills the tensors, in the order of es, into out. */
static int
load_tensors(const char *what, const entry *es, int n, const uint8_t *data, coil_tensor_list *out,
             coil_diag *d)
{
  for (int i = 0; i < n; i++) {
    coil_tensor t;
    coil_diag sub = {{0}};
    if (coil_tensor_init(&t, es[i].dtype, es[i].rank, es[i].shape, &sub))
      return coil_diag_set(d, "%s: tensor '%.200s': %s", what, es[i].name, sub.msg);
    memcpy(t.data, data + es[i].begin, (size_t)(es[i].end - es[i].begin));
    coil_tensor_list_add(out, es[i].name, &t);
  }
  return 0;
}

/* Checks the JSON header (already known to be valid UTF-8) and loads every tensor into out. */
static int
read_header(const char *what, const char *hdr, size_t hlen, const uint8_t *data, size_t data_len,
            coil_tensor_list *out, coil_diag *d)
{
  /* The parse is bounded by hlen; cJSON's global error pointer is avoided (end gives the same
   * position) because two threads may read files at once. */
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(hdr, hlen, &end, false);
  if (!root) {
    size_t at = end && end >= hdr && end <= hdr + hlen ? (size_t)(end - hdr) : 0;
    return coil_diag_set(d, "%s: header is not valid JSON near byte %zu", what, 8 + at);
  }
  int rc = -1;
  entry *es = NULL;
  /* The header may be padded, but only with whitespace. */
  for (const char *p = end; p < hdr + hlen; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      coil_diag_set(d, "%s: unexpected byte 0x%02x after the header's JSON object at byte %zu, "
                    "expected only space padding", what, (unsigned char)*p,
                    8 + (size_t)(p - hdr));
      goto done;
    }
  if (!cJSON_IsObject(root)) {
    coil_diag_set(d, "%s: header is not a JSON object, expected {\"NAME\": {...}, ...}", what);
    goto done;
  }

  int n = 0, n_meta = 0;
  for (const cJSON *j = root->child; j; j = j->next)
    n++;
  es = coil_xmalloc(sizeof *es * (size_t)(n ? n : 1));
  int k = 0;
  for (const cJSON *j = root->child; j; j = j->next) {
    if (strcmp(j->string, "__metadata__") == 0) {
      if (n_meta++) {
        coil_diag_set(d, "%s: duplicate key \"__metadata__\"", what);
        goto done;
      }
      if (check_metadata(what, j, d))
        goto done;
      continue;
    }
    entry *e = &es[k];
    memset(e, 0, sizeof *e);
    e->name = j->string;
    e->index = k++;
    if (parse_entry(what, e, j, data_len, d))
      goto done;
  }
  n = k;
  if (check_duplicates(what, es, n, d))
    goto done;
  qsort(es, (size_t)n, sizeof *es, cmp_offset);
  if (check_overlaps(what, es, n, d) || load_tensors(what, es, n, data, out, d))
    goto done;
  rc = 0;
done:
  free(es);
  cJSON_Delete(root);
  return rc;
}

/* *out is overwritten: it must hold no tensors on entry. On error it is left empty. */
int
coil_safetensors_read_mem(const char *what, const uint8_t *buf, size_t n, coil_tensor_list *out,
                          coil_diag *d)
{
  if (!what)
    what = "<memory>";
  memset(out, 0, sizeof *out);
  if (n < 8)
    return coil_diag_set(d, "%s: file is %zu bytes, too short for the 8-byte header length",
                         what, n);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | buf[i];
  if (hlen > MAX_HEADER_BYTES)
    return coil_diag_set(d, "%s: header length %llu at byte 0 is absurdly large, expected at "
                         "most %u bytes", what, (unsigned long long)hlen, MAX_HEADER_BYTES);
  if (hlen > n - 8)
    return coil_diag_set(d, "%s: header length %llu at byte 0 is larger than the %zu bytes "
                         "that follow it", what, (unsigned long long)hlen, n - 8);
  size_t bad = utf8_valid_prefix(buf + 8, (size_t)hlen);
  if (bad != hlen)
    return coil_diag_set(d, "%s: header is not valid UTF-8 at byte %zu", what, 8 + bad);

  /* A NUL-terminated copy: older cJSON releases could read one byte past an unterminated
   * string even in the length-bounded parse (CVE-2023-53154). */
  char *hdr = coil_xmalloc((size_t)hlen + 1);
  memcpy(hdr, buf + 8, (size_t)hlen);
  hdr[hlen] = '\0';
  const uint8_t *data = buf + 8 + hlen;
  int rc = read_header(what, hdr, (size_t)hlen, data, n - 8 - (size_t)hlen, out, d);
  free(hdr);
  if (rc)
    coil_tensor_list_free(out);
  return rc;
}

/* Reads the whole file into memory. A file that shrinks while being read simply reads short;
 * the parser then rejects it like any truncated file. */
static int
slurp(const char *path, uint8_t **buf, size_t *len, coil_diag *d)
{
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return coil_diag_set(d, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return coil_diag_set(d, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return coil_diag_set(d, "%s: not a regular file", path);
  }
  size_t size = (size_t)st.st_size, got = 0;
  uint8_t *p = coil_xmalloc(size ? size : 1);
  while (got < size) {
    ssize_t r = read(fd, p + got, size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      free(p);
      close(fd);
      return coil_diag_set(d, "%s: read error at byte %zu: %s", path, got, strerror(e));
    }
    if (r == 0)
      break;
    got += (size_t)r;
  }
  close(fd);
  *buf = p;
  *len = got;
  return 0;
}

int
coil_safetensors_read(const char *path, coil_tensor_list *out, coil_diag *d)
{
  uint8_t *buf = NULL;
  size_t len = 0;
  memset(out, 0, sizeof *out);
  if (slurp(path, &buf, &len, d))
    return -1;
  int rc = coil_safetensors_read_mem(path, buf, len, out, d);
  free(buf);
  return rc;
}

/* ---------------------------------------------------------------- writing ---- */

/* Names must be non-empty, valid UTF-8 (the header is UTF-8), not the reserved "__metadata__",
 * and unique; each tensor must be a well-formed host tensor. */
static int
check_list(const char *path, const coil_tensor_list *l, coil_diag *d)
{
  for (int i = 0; i < l->n; i++) {
    const char *name = l->names[i];
    const coil_tensor *t = &l->tensors[i];
    if (!name || !name[0])
      return coil_diag_set(d, "%s: tensor %d has an empty name", path, i);
    if (utf8_valid_prefix((const unsigned char *)name, strlen(name)) != strlen(name))
      return coil_diag_set(d, "%s: tensor %d: name is not valid UTF-8", path, i);
    if (strcmp(name, "__metadata__") == 0)
      return coil_diag_set(d, "%s: tensor %d: the name \"__metadata__\" is reserved", path, i);
    if ((unsigned)t->dtype >= COIL_DTYPE_COUNT || t->rank < 0 || t->rank > COIL_MAX_RANK)
      return coil_diag_set(d, "%s: tensor '%.200s' has an invalid dtype or rank", path, name);
    for (int k = 0; k < t->rank; k++)
      if (t->shape[k] < 0 || (double)t->shape[k] > MAX_EXACT_INT)
        return coil_diag_set(d, "%s: tensor '%.200s': size %lld of dimension %d cannot be "
                             "stored", path, name, (long long)t->shape[k], k);
    if (!t->data && coil_tensor_nbytes(t) > 0)
      return coil_diag_set(d, "%s: tensor '%.200s' has no data", path, name);
  }
  /* Quadratic, but lists are checkpoint-sized (thousands at most) and this runs once. */
  for (int i = 0; i < l->n; i++)
    for (int k = 0; k < i; k++)
      if (strcmp(l->names[i], l->names[k]) == 0)
        return coil_diag_set(d, "%s: duplicate tensor name '%.200s'", path, l->names[i]);
  return 0;
}

/* The header JSON, unpadded; NULL when out of memory. Offsets follow list order. */
static char *
build_header(const coil_tensor_list *l)
{
  cJSON *root = cJSON_CreateObject();
  if (!root)
    return NULL;
  uint64_t off = 0;
  for (int i = 0; i < l->n; i++) {
    const coil_tensor *t = &l->tensors[i];
    uint64_t end = off + coil_tensor_nbytes(t);
    double offs[2] = {(double)off, (double)end}, shape[COIL_MAX_RANK];
    for (int k = 0; k < t->rank; k++)
      shape[k] = (double)t->shape[k];
    cJSON *e = cJSON_CreateObject();
    /* cJSON_Add* return NULL, and leave root intact, when an allocation fails. */
    if (!e || !cJSON_AddStringToObject(e, "dtype", coil_dtype_st_name(t->dtype)) ||
        !cJSON_AddItemToObject(e, "shape", cJSON_CreateDoubleArray(shape, t->rank)) ||
        !cJSON_AddItemToObject(e, "data_offsets", cJSON_CreateDoubleArray(offs, 2)) ||
        !cJSON_AddItemToObject(root, l->names[i], e)) {
      cJSON_Delete(e);
      cJSON_Delete(root);
      return NULL;
    }
    off = end;
  }
  char *s = cJSON_PrintUnformatted(root);
  cJSON_Delete(root);
  return s;
}

/* Header length, padded header, then each tensor's bytes. -1 with errno set on failure. */
static int
write_file(int fd, const char *json, const coil_tensor_list *l)
{
  size_t jlen = strlen(json), hlen = (jlen + 7) & ~(size_t)7;
  uint8_t *head = coil_xmalloc(8 + hlen);
  for (int i = 0; i < 8; i++)
    head[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
  memcpy(head + 8, json, jlen);
  memset(head + 8 + jlen, ' ', hlen - jlen);
  int rc = coil_write_all(fd, head, 8 + hlen);
  int e = errno;
  free(head);
  for (int i = 0; i < l->n && rc == 0; i++) {
    rc = coil_write_all(fd, l->tensors[i].data, coil_tensor_nbytes(&l->tensors[i]));
    e = errno;
  }
  errno = e;
  return rc;
}

typedef struct {
  const char *json;
  const coil_tensor_list *l;
} st_writer;

static int
write_cb(int fd, void *ctx)
{
  const st_writer *w = ctx;
  return write_file(fd, w->json, w->l);
}

int
coil_safetensors_write(const char *path, const coil_tensor_list *l, coil_diag *d)
{
  if (check_list(path, l, d))
    return -1;
  char *json = build_header(l);
  if (!json)
    return coil_diag_set(d, "%s: out of memory building the header", path);
  st_writer w = {json, l};
  int rc = coil_write_file(path, write_cb, &w, d);
  cJSON_free(json);
  return rc;
}
