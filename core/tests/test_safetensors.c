/* test_safetensors.c — the safetensors reader and writer: round trips for every dtype (0-d and
 * zero-size tensors included), a file written by PyTorch, every rejection the reader makes
 * (each built in memory, byte for byte, in exactly-sized heap buffers so that AddressSanitizer
 * catches any read out of bounds), the malformed-file corpus in core/tests/bad/safetensors, and
 * the writer's promise never to leave a partial file. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coil/coil.h"

/* ---------------------------------------------------------------- helpers ---- */

/* A safetensors image: u64 LE hlen, the header bytes, then data_len bytes of data. hlen is
 * normally the header's length; tests of the length field pass another. */
static uint8_t *
image(uint64_t hlen, const char *header, size_t header_len, const void *data, size_t data_len,
      size_t *n)
{
  *n = 8 + header_len + data_len;
  uint8_t *b = malloc(*n ? *n : 1);
  cr_assert_not_null(b);
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(hlen >> (8 * i));
  memcpy(b + 8, header, header_len);
  if (data_len)
    memcpy(b + 8 + header_len, data, data_len);
  return b;
}

static void
expect_reject_buf(const uint8_t *buf, size_t n, const char *want)
{
  coil_diag d = {{0}};
  coil_tensor_list l = {0};
  int rc = coil_safetensors_read_mem("bad.st", buf, n, &l, &d);
  cr_assert_eq(rc, -1, "accepted, expected an error containing '%s'", want);
  cr_assert_eq(l.n, 0);
  cr_assert_null(l.names);
  cr_assert_null(l.tensors);
  cr_assert(strncmp(d.msg, "bad.st: ", 8) == 0, "message does not name the file: %s", d.msg);
  cr_assert(strstr(d.msg, want), "expected '%s' in: %s", want, d.msg);
}

/* A file with this JSON header and data_len zero bytes of data must be rejected. */
static void
reject(const char *json, size_t data_len, const char *want)
{
  size_t n;
  uint8_t *zeros = calloc(1, data_len ? data_len : 1);
  uint8_t *b = image(strlen(json), json, strlen(json), zeros, data_len, &n);
  expect_reject_buf(b, n, want);
  free(b);
  free(zeros);
}

/* Reads a file with this header and data, which must succeed. */
static void
accept(const char *json, const void *data, size_t data_len, coil_tensor_list *l)
{
  size_t n;
  coil_diag d = {{0}};
  uint8_t *b = image(strlen(json), json, strlen(json), data, data_len, &n);
  int rc = coil_safetensors_read_mem("good.st", b, n, l, &d);
  free(b);
  cr_assert_eq(rc, 0, "rejected: %s", d.msg);
}

static char *
make_tempdir(void)
{
  char tmpl[] = "/tmp/coil_st_XXXXXX";
  cr_assert_not_null(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno));
  return strdup(tmpl);
}

static char *
join(const char *dir, const char *name)
{
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

/* Entries of dir other than "." and "..". */
static int
count_entries(const char *dir)
{
  DIR *dp = opendir(dir);
  cr_assert_not_null(dp, "opendir %s: %s", dir, strerror(errno));
  int n = 0;
  for (struct dirent *de; (de = readdir(dp));)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++;
  closedir(dp);
  return n;
}

/* Removes dir and the regular files and empty directories in it. */
static void
remove_tempdir(char *dir)
{
  DIR *dp = opendir(dir);
  for (struct dirent *de; dp && (de = readdir(dp));) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    char *p = join(dir, de->d_name);
    if (unlink(p) != 0)
      rmdir(p);
    free(p);
  }
  if (dp)
    closedir(dp);
  rmdir(dir);
  free(dir);
}

static uint8_t *
read_all(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(*n ? *n : 1);
  cr_assert_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void
add_tensor(coil_tensor_list *l, const char *name, coil_dtype dt, int rank, const int64_t *shape,
           unsigned seed)
{
  coil_tensor t;
  coil_diag d = {{0}};
  cr_assert_eq(coil_tensor_init(&t, dt, rank, shape, &d), 0, "%s", d.msg);
  uint8_t *p = t.data;
  for (size_t i = 0; i < coil_tensor_nbytes(&t); i++)
    p[i] = dt == COIL_BOOL ? (i * 7 + seed) % 3 == 0 : (uint8_t)(i * 37 + seed * 11 + 5);
  coil_tensor_list_add(l, name, &t);
}

static void
assert_same_lists(const coil_tensor_list *a, const coil_tensor_list *b)
{
  cr_assert_eq(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    const coil_tensor *x = &a->tensors[i], *y = &b->tensors[i];
    cr_assert_str_eq(a->names[i], b->names[i]);
    cr_assert_eq(x->dtype, y->dtype, "%s", a->names[i]);
    cr_assert_eq(x->rank, y->rank, "%s", a->names[i]);
    for (int k = 0; k < x->rank; k++)
      cr_assert_eq(x->shape[k], y->shape[k], "%s dim %d", a->names[i], k);
    cr_assert_eq(memcmp(x->data, y->data, coil_tensor_nbytes(x)), 0, "%s data", a->names[i]);
  }
}

/* ---------------------------------------------------------------- round trips ---- */

/* Tensors of one dtype in every shape class: empty first (it shares its offset with the next
 * tensor), 0-d, zero-size of rank 3, odd and multi-dimensional sizes. Written in list order,
 * the data offsets ascend in list order, so the reader gives the same order back. */
static void
roundtrip(coil_dtype dt)
{
  static const int64_t empty[] = {0}, zero3[] = {3, 0, 2}, odd[] = {7}, big[] = {2, 3, 4},
                       rank8[] = {1, 2, 1, 2, 1, 2, 1, 3};
  coil_tensor_list l = {0}, back = {0};
  add_tensor(&l, "empty", dt, 1, empty, 1);
  add_tensor(&l, "scalar", dt, 0, NULL, 2);
  add_tensor(&l, "zero3", dt, 3, zero3, 3);
  add_tensor(&l, "odd", dt, 1, odd, 4);
  add_tensor(&l, "big.weight", dt, 3, big, 5);
  add_tensor(&l, "gr\xc3\xb6\xc3\x9f" "e \"q\" \\", dt, 8, rank8, 6);

  char *dir = make_tempdir(), *path = join(dir, "rt.safetensors");
  coil_diag d = {{0}};
  cr_assert_eq(coil_safetensors_write(path, &l, &d), 0, "%s", d.msg);
  cr_assert_eq(count_entries(dir), 1, "temporary file left behind");
  cr_assert_eq(coil_safetensors_read(path, &back, &d), 0, "%s", d.msg);
  assert_same_lists(&l, &back);

  /* Layout: header padded with spaces to a multiple of 8, then the data with no gaps. */
  size_t n, data = 0;
  uint8_t *b = read_all(path, &n);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--)
    hlen = hlen << 8 | b[i];
  for (int i = 0; i < l.n; i++)
    data += coil_tensor_nbytes(&l.tensors[i]);
  cr_assert_eq(hlen % 8, 0);
  cr_assert_eq(n, 8 + hlen + data);
  cr_assert_eq(b[8], '{');
  for (size_t i = 8 + hlen - 1; b[i] != '}'; i--)
    cr_assert_eq(b[i], ' ', "padding byte %zu is 0x%02x", i, b[i]);

  free(b);
  coil_tensor_list_free(&l);
  coil_tensor_list_free(&back);
  free(path);
  remove_tempdir(dir);
}

#define X(e, name, st, size, kind) \
  Test(safetensors, roundtrip_##e) { roundtrip(COIL_##e); }
#include "coil/dtypes.def"
#undef X

Test(safetensors, roundtrip_empty_list)
{
  char *dir = make_tempdir(), *path = join(dir, "none.safetensors");
  coil_tensor_list l = {0}, back = {0};
  coil_diag d = {{0}};
  cr_assert_eq(coil_safetensors_write(path, &l, &d), 0, "%s", d.msg);
  cr_assert_eq(coil_safetensors_read(path, &back, &d), 0, "%s", d.msg);
  cr_assert_eq(back.n, 0);
  size_t n;
  uint8_t *b = read_all(path, &n);
  cr_assert_eq(n, 16);
  cr_assert_eq(memcmp(b, "\x08\0\0\0\0\0\0\0{}      ", 16), 0);
  free(b);
  free(path);
  remove_tempdir(dir);
}

Test(safetensors, overwrite_keeps_mode)
{
  char *dir = make_tempdir(), *path = join(dir, "w.safetensors");
  static const int64_t s2[] = {2};
  coil_tensor_list a = {0}, b = {0}, back = {0};
  add_tensor(&a, "a", COIL_F32, 1, s2, 1);
  add_tensor(&b, "b", COIL_I16, 1, s2, 2);
  coil_diag d = {{0}};
  cr_assert_eq(coil_safetensors_write(path, &a, &d), 0, "%s", d.msg);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0644, "a new file is 0644, not mkstemp's 0600");
  cr_assert_eq(chmod(path, 0640), 0);
  cr_assert_eq(coil_safetensors_write(path, &b, &d), 0, "%s", d.msg);
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0640);
  cr_assert_eq(coil_safetensors_read(path, &back, &d), 0, "%s", d.msg);
  assert_same_lists(&b, &back);
  cr_assert_eq(count_entries(dir), 1);
  coil_tensor_list_free(&a);
  coil_tensor_list_free(&b);
  coil_tensor_list_free(&back);
  free(path);
  remove_tempdir(dir);
}

/* ---------------------------------------------------------------- PyTorch's file ---- */

Test(safetensors, reads_torch_file)
{
  const char *path = COIL_SHARED_DIR "/torch-exports/e12_argmin_any_where.expected.safetensors";
  struct stat st;
  if (stat(COIL_SHARED_DIR "/torch-exports", &st) != 0)
    cr_skip_test("%s/torch-exports is missing", COIL_SHARED_DIR);
  coil_tensor_list l = {0};
  coil_diag d = {{0}};
  cr_assert_eq(coil_safetensors_read(path, &l, &d), 0, "%s", d.msg);

  /* In data-offset order: out0 [0, 48), out2 [48, 52), out1 [52, 62). */
  cr_assert_eq(l.n, 3);
  cr_assert_str_eq(l.names[0], "out0");
  cr_assert_str_eq(l.names[1], "out2");
  cr_assert_str_eq(l.names[2], "out1");
  coil_tensor *o0 = coil_tensor_list_find(&l, "out0"), *o1 = coil_tensor_list_find(&l, "out1"),
              *o2 = coil_tensor_list_find(&l, "out2");
  cr_assert(o0->dtype == COIL_I64 && o0->rank == 1 && o0->shape[0] == 6);
  cr_assert(o1->dtype == COIL_BOOL && o1->rank == 1 && o1->shape[0] == 10);
  cr_assert(o2->dtype == COIL_F32 && o2->rank == 0);
  for (int i = 0; i < 10; i++)
    cr_assert(((uint8_t *)o1->data)[i] <= 1, "bool byte %d", i);
  for (int i = 0; i < 6; i++) /* argmin over a dimension: indices are small and non-negative */
    cr_assert(coil_tensor_get_i64(o0, i) >= 0 && coil_tensor_get_i64(o0, i) < 1000);

  /* Writing it back reproduces PyTorch's file byte for byte: same key order (the offset order),
   * same compact JSON, same padding. */
  char *dir = make_tempdir(), *copy = join(dir, "copy.safetensors");
  cr_assert_eq(coil_safetensors_write(copy, &l, &d), 0, "%s", d.msg);
  size_t n1, n2;
  uint8_t *b1 = read_all(path, &n1), *b2 = read_all(copy, &n2);
  cr_assert_eq(n1, n2);
  cr_assert_eq(memcmp(b1, b2, n1), 0, "rewrite differs from PyTorch's file");
  free(b1);
  free(b2);
  free(copy);
  remove_tempdir(dir);
  coil_tensor_list_free(&l);
}

/* ---------------------------------------------------------------- accepted input ---- */

Test(safetensors, values_are_little_endian)
{
  static const uint8_t data[] = {0x00, 0x00, 0x80, 0x3f, /* 1.0f */
                                 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* -2 */
                                 0x00, 0x3c /* f16 1.0 */};
  coil_tensor_list l = {0};
  accept("{\"f\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
         "\"i\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[4,12]},"
         "\"h\":{\"dtype\":\"F16\",\"shape\":[1,1],\"data_offsets\":[12,14]}}",
         data, sizeof data, &l);
  cr_assert_eq(l.n, 3);
  cr_assert_eq(coil_tensor_get_f64(coil_tensor_list_find(&l, "f"), 0), 1.0);
  cr_assert_eq(coil_tensor_get_i64(coil_tensor_list_find(&l, "i"), 0), -2);
  cr_assert_eq(coil_tensor_get_f64(coil_tensor_list_find(&l, "h"), 0), 1.0);
  coil_tensor_list_free(&l);
}

Test(safetensors, orders_by_data_offset)
{
  static const uint8_t data[12] = {0};
  coil_tensor_list l = {0};
  accept("{\"c\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[8,12]},"
         "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}}",
         data, sizeof data, &l);
  cr_assert_eq(l.n, 3);
  cr_assert_str_eq(l.names[0], "b");
  cr_assert_str_eq(l.names[1], "a");
  cr_assert_str_eq(l.names[2], "c");
  coil_tensor_list_free(&l);
}

Test(safetensors, accepts_padding_metadata_gaps_and_extra_keys)
{
  static const uint8_t data[16] = {1, 2, 3, 4};
  coil_tensor_list l = {0};
  /* __metadata__ is ignored; bytes 4..8 and 12..16 belong to no tensor; "extra" is ignored; an
   * empty tensor inside another's range owns no bytes, so does not overlap. */
  accept("{\"__metadata__\":{\"format\":\"pt\"},"
         "\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4],\"extra\":[1]},"
         "\"e\":{\"dtype\":\"F64\",\"shape\":[0,5],\"data_offsets\":[2,2]},"
         "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[8,12]}}     \n  ",
         data, sizeof data, &l);
  cr_assert_eq(l.n, 3);
  cr_assert_str_eq(l.names[0], "a");
  cr_assert_str_eq(l.names[1], "e");
  cr_assert_str_eq(l.names[2], "b");
  cr_assert_eq(coil_tensor_get_i64(&l.tensors[0], 0), 0x04030201);
  coil_tensor_list_free(&l);
}

/* ---------------------------------------------------------------- the length field ---- */

Test(safetensors, rejects_short_file)
{
  uint8_t *b = malloc(5);
  memset(b, 0, 5);
  expect_reject_buf(b, 5, "file is 5 bytes, too short for the 8-byte header length");
  expect_reject_buf(b, 0, "file is 0 bytes, too short");
  free(b);
}

Test(safetensors, rejects_header_past_end)
{
  size_t n;
  uint8_t *b = image(100, "{}", 2, "abcd", 4, &n);
  expect_reject_buf(b, n, "header length 100 at byte 0 is larger than the 6 bytes that follow");
  free(b);
}

Test(safetensors, rejects_absurd_header_length)
{
  size_t n;
  uint8_t *b = image(200000000, "{}", 2, NULL, 0, &n);
  expect_reject_buf(b, n, "header length 200000000 at byte 0 is absurdly large");
  free(b);
  b = image(UINT64_MAX, "{}", 2, NULL, 0, &n);
  expect_reject_buf(b, n, "header length 18446744073709551615 at byte 0 is absurdly large");
  free(b);
}

/* ---------------------------------------------------------------- the JSON header ---- */

Test(safetensors, rejects_invalid_json)
{
  /* cJSON stops at the '"' where ':' was expected: header byte 14, file byte 22. */
  reject("{\"a\":{\"dtype\" \"F32\"}}", 0, "header is not valid JSON near byte 22");
  reject("{\"a", 0, "header is not valid JSON near byte");  /* unterminated string */
  reject("", 0, "header is not valid JSON near byte 8");     /* empty header */
  reject("{\"a\":[1,2,}", 0, "header is not valid JSON near byte");
}

Test(safetensors, rejects_deep_nesting)
{
  enum { DEPTH = 5000 };
  char *j = malloc(DEPTH + 1);
  memset(j, '[', DEPTH);
  j[DEPTH] = '\0';
  reject(j, 0, "header is not valid JSON near byte");
  free(j);
}

Test(safetensors, rejects_trailing_bytes)
{
  reject("{}  x", 0, "unexpected byte 0x78 after the header's JSON object at byte 12");
  size_t n;
  uint8_t *b = image(8, "{}\0     ", 8, NULL, 0, &n);
  expect_reject_buf(b, n, "unexpected byte 0x00 after the header's JSON object at byte 10");
  free(b);
}

Test(safetensors, rejects_invalid_utf8)
{
  reject("{\"\xff\":{}}", 0, "header is not valid UTF-8 at byte 10");
  reject("{\"\xc0\xaf\":{}}", 0, "header is not valid UTF-8 at byte 10"); /* overlong '/' */
  reject("{\"\xed\xa0\x80\":{}}", 0, "not valid UTF-8 at byte 10");       /* surrogate */
  reject("{\"ab\xe2\x82", 0, "not valid UTF-8 at byte 12");               /* cut short */
}

Test(safetensors, rejects_non_object_header)
{
  reject("[1, 2]", 0, "header is not a JSON object");
  reject("\"F32\"", 0, "header is not a JSON object");
  reject("null", 0, "header is not a JSON object");
}

Test(safetensors, rejects_bad_metadata)
{
  reject("{\"__metadata__\":[1]}", 0, "\"__metadata__\" is not a JSON object of strings");
  reject("{\"__metadata__\":{\"k\":1}}", 0, "\"__metadata__\" value of key 'k' is not a string");
  reject("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate key \"__metadata__\"");
}

/* ---------------------------------------------------------------- tensor entries ---- */

Test(safetensors, rejects_non_object_entry)
{
  reject("{\"w\":5}", 0, "tensor 'w': entry is not a JSON object");
  reject("{\"w\":[\"F32\",[1],[0,4]]}", 4, "tensor 'w': entry is not a JSON object");
}

Test(safetensors, rejects_missing_fields)
{
  reject("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': entry has no \"dtype\"");
  reject("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4,
         "tensor 'w': entry has no \"shape\"");
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4,
         "tensor 'w': entry has no \"data_offsets\"");
  reject("{\"w\":{\"Dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
         "entry has no \"dtype\""); /* keys are case-sensitive */
}

Test(safetensors, rejects_unknown_dtype)
{
  reject("{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
         "tensor 'w': unknown dtype \"F8_E4M3\", expected one of F64 F32");
  reject("{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
         "unknown dtype \"f32\"");
  reject("{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
         "tensor 'w': \"dtype\" is not a string");
}

Test(safetensors, rejects_bad_shape)
{
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":3,\"data_offsets\":[0,12]}}", 12,
         "tensor 'w': \"shape\" is not an array, expected an array of non-negative integers");
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,0]}}", 0,
         "tensor 'w': shape[1] is not a non-negative integer");
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
         "shape[0] is not a non-negative integer");
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]}}", 8,
         "shape[0] is not a non-negative integer");
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,8]}}", 8,
         "shape[0] is not a non-negative integer");
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[1,null],\"data_offsets\":[0,4]}}", 4,
         "shape[1] is not a non-negative integer");
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
         "tensor 'w': shape has 9 dimensions, at most 8 are supported");
}

Test(safetensors, rejects_unaddressable_shape)
{
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
         "\"data_offsets\":[0,4]}}", 4, "tensor 'w': shape is too large to address");
}

Test(safetensors, rejects_bad_data_offsets)
{
  const char *want = "tensor 'w': \"data_offsets\" is not an array of two non-negative integers";
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":7}}", 8, want);
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 8, want);
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 8, want);
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 8, want);
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1.0001]}}", 8, want);
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[\"0\",\"1\"]}}", 8, want);
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[]}}", 8, want);
}

Test(safetensors, rejects_reversed_offsets)
{
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[5,4]}}", 8,
         "tensor 'w': data_offsets [5, 4] have begin after end");
}

Test(safetensors, rejects_offsets_past_data)
{
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4,
         "tensor 'w': data_offsets [0, 8] run past the end of the data section, which is 4 bytes");
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[9,9]}}", 8,
         "data_offsets [9, 9] run past the end of the data section, which is 8 bytes");
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],"
         "\"data_offsets\":[9007199254740991,9007199254740992]}}", 8, "run past the end");
}

Test(safetensors, rejects_size_mismatch)
{
  reject("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 12,
         "tensor 'w': byte size mismatch: data_offsets [0, 8] span 8 bytes, but F32[3] needs 12 "
         "bytes");
  reject("{\"w\":{\"dtype\":\"BF16\",\"shape\":[2,3],\"data_offsets\":[0,6]}}", 12,
         "span 6 bytes, but BF16[2, 3] needs 12 bytes");
  reject("{\"w\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,0]}}", 12,
         "span 0 bytes, but I64[] needs 8 bytes");
  reject("{\"w\":{\"dtype\":\"I8\",\"shape\":[0],\"data_offsets\":[0,1]}}", 12,
         "span 1 bytes, but I8[0] needs 0 bytes");
}

Test(safetensors, rejects_overlap)
{
  reject("{\"a\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", 8,
         "tensors 'a' and 'b' overlap: data bytes [0, 8) and [4, 8)");
  /* b and c are listed first, and c only overlaps a, which reaches past the empty b */
  reject("{\"c\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[10,12]},"
         "\"b\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,4]},"
         "\"a\":{\"dtype\":\"U8\",\"shape\":[16],\"data_offsets\":[0,16]}}", 16,
         "tensors 'a' and 'c' overlap: data bytes [0, 16) and [10, 12)");
  /* identical ranges */
  reject("{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
         "tensors 'a' and 'b' overlap");
}

Test(safetensors, rejects_duplicate_names)
{
  reject("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
         "\"v\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]},"
         "\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[2,3]}}", 3,
         "duplicate tensor name 'w'");
}

/* The checks pass but allocating the second tensor fails (a zero-size tensor whose dimensions
 * overflow coil_tensor_init's bound): the first, already loaded, must be freed, which the leak
 * checker verifies. */
Test(safetensors, frees_partial_list_on_load_error)
{
  reject("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
         "\"z\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,0],\"data_offsets\":[4,4]}}",
         4, "tensor 'z': tensor of 3 dimensions is too large");
}

/* ---------------------------------------------------------------- files ---- */

Test(safetensors, rejects_missing_file)
{
  coil_tensor_list l = {0};
  coil_diag d = {{0}};
  cr_assert_eq(coil_safetensors_read("/nonexistent/x.safetensors", &l, &d), -1);
  cr_assert_eq(l.n, 0);
  cr_assert_str_eq(d.msg, "/nonexistent/x.safetensors: cannot open: No such file or directory");
}

Test(safetensors, rejects_directory)
{
  char *dir = make_tempdir();
  coil_tensor_list l = {0};
  coil_diag d = {{0}};
  cr_assert_eq(coil_safetensors_read(dir, &l, &d), -1);
  cr_assert(strstr(d.msg, ": not a regular file"), "%s", d.msg);
  remove_tempdir(dir);
}

/* Every NAME.safetensors in core/tests/bad/safetensors is rejected with a message containing
 * the line in NAME.expect, and naming the file. */
Test(safetensors, bad_corpus)
{
  const char *dir = COIL_SOURCE_DIR "/core/tests/bad/safetensors";
  DIR *dp = opendir(dir);
  cr_assert_not_null(dp, "%s: %s", dir, strerror(errno));
  int cases = 0;
  for (struct dirent *de; (de = readdir(dp));) {
    size_t len = strlen(de->d_name);
    const char *ext = ".safetensors";
    if (len <= strlen(ext) || strcmp(de->d_name + len - strlen(ext), ext) != 0)
      continue;
    char *path = join(dir, de->d_name);
    char *expect_path = malloc(strlen(path) + 8);
    strcpy(expect_path, path);
    strcpy(expect_path + strlen(path) - strlen(ext), ".expect");
    size_t n;
    uint8_t *want = read_all(expect_path, &n);
    want = realloc(want, n + 1);
    want[n] = '\0';
    while (n > 0 && (want[n - 1] == '\n' || want[n - 1] == '\r'))
      want[--n] = '\0';
    cr_assert_gt(n, 0, "%s is empty", expect_path);

    coil_tensor_list l = {0};
    coil_diag d = {{0}};
    cr_assert_eq(coil_safetensors_read(path, &l, &d), -1, "%s was accepted", de->d_name);
    cr_assert_eq(l.n, 0);
    cr_assert(strncmp(d.msg, path, strlen(path)) == 0, "message does not name %s: %s",
              path, d.msg);
    cr_assert(strstr(d.msg, (char *)want), "%s: expected '%s' in: %s", de->d_name,
              (char *)want, d.msg);
    free(want);
    free(expect_path);
    free(path);
    cases++;
  }
  closedir(dp);
  cr_assert_geq(cases, 10, "only %d corpus files found in %s", cases, dir);
}

/* ---------------------------------------------------------------- the writer's failures ---- */

static void
expect_write_fails(const char *path, const coil_tensor_list *l, const char *want)
{
  coil_diag d = {{0}};
  cr_assert_eq(coil_safetensors_write(path, l, &d), -1, "write succeeded");
  cr_assert(strncmp(d.msg, path, strlen(path)) == 0, "message does not name %s: %s", path,
            d.msg);
  cr_assert(strstr(d.msg, want), "expected '%s' in: %s", want, d.msg);
}

Test(safetensors, write_to_missing_directory)
{
  char *dir = make_tempdir(), *path = join(dir, "no/such/dir/x.safetensors");
  static const int64_t s1[] = {1};
  coil_tensor_list l = {0};
  add_tensor(&l, "a", COIL_F32, 1, s1, 1);
  expect_write_fails(path, &l, "No such file or directory");
  cr_assert_eq(count_entries(dir), 0, "something was left behind");
  coil_tensor_list_free(&l);
  free(path);
  remove_tempdir(dir);
}

/* a directory at the path: refused before anything is written, and nothing is left behind */
Test(safetensors, write_over_directory_removes_temp)
{
  char *dir = make_tempdir(), *path = join(dir, "target");
  cr_assert_eq(mkdir(path, 0755), 0);
  static const int64_t s4[] = {4};
  coil_tensor_list l = {0};
  add_tensor(&l, "a", COIL_F64, 1, s4, 1);
  expect_write_fails(path, &l, "it is a directory, not a file");
  cr_assert_eq(count_entries(dir), 1, "temporary file left behind");
  coil_tensor_list_free(&l);
  free(path);
  remove_tempdir(dir);
}

Test(safetensors, write_rejects_bad_names)
{
  char *dir = make_tempdir(), *path = join(dir, "x.safetensors");
  static const int64_t s1[] = {1};
  coil_tensor_list l = {0};
  add_tensor(&l, "", COIL_F32, 1, s1, 1);
  expect_write_fails(path, &l, "tensor 0 has an empty name");
  coil_tensor_list_free(&l);

  add_tensor(&l, "a", COIL_F32, 1, s1, 1);
  add_tensor(&l, "b", COIL_I8, 1, s1, 1);
  add_tensor(&l, "a", COIL_U8, 1, s1, 1);
  expect_write_fails(path, &l, "duplicate tensor name 'a'");
  coil_tensor_list_free(&l);

  add_tensor(&l, "__metadata__", COIL_F32, 1, s1, 1);
  expect_write_fails(path, &l, "the name \"__metadata__\" is reserved");
  coil_tensor_list_free(&l);

  add_tensor(&l, "bad\xff", COIL_F32, 1, s1, 1);
  expect_write_fails(path, &l, "name is not valid UTF-8");
  coil_tensor_list_free(&l);

  cr_assert_eq(count_entries(dir), 0, "a file was written");
  free(path);
  remove_tempdir(dir);
}
