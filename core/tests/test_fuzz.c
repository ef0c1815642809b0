/* Robustness: thousands of deterministic random mutations of valid inputs (the example graphs
 * and one safetensors file) must each either parse or fail with a message that names the file;
 * never crash, hang or read out of bounds (the sanitizer build runs this too). Graphs that still
 * parse are printed and must parse back. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil.h"

static uint64_t
rnd(uint64_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static char *
slurp(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len + 1);
  cr_assert_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return buf;
}

/* One mutation: flip, insert, delete, duplicate a span, or truncate. */
static size_t
mutate(uint64_t *s, char *buf, size_t n, size_t cap)
{
  static const char interesting[] = "%()[]{},:=#'\"\n -.0123456789eE_aznfi\x00\xff";
  size_t at = n ? rnd(s) % n : 0;
  switch (rnd(s) % 5) {
  case 0:
    if (n)
      buf[at] = interesting[rnd(s) % (sizeof interesting - 1)];
    return n;
  case 1:
    if (n + 1 >= cap)
      return n;
    memmove(buf + at + 1, buf + at, n - at);
    buf[at] = (char)(rnd(s) & 0xff);
    return n + 1;
  case 2:
    if (!n)
      return n;
    memmove(buf + at, buf + at + 1, n - at - 1);
    return n - 1;
  case 3: {
    size_t len = 1 + rnd(s) % 16;
    if (at + len > n || n + len >= cap)
      return n;
    memmove(buf + at + len, buf + at, n - at);
    return n + len;
  }
  default:
    return at;
  }
}

static void
fuzz_graph(const char *path, uint64_t seed, int rounds)
{
  size_t n;
  char *orig = slurp(path, &n);
  size_t cap = n + 256;
  char *buf = malloc(cap);
  uint64_t s = seed;
  int parsed = 0;
  for (int r = 0; r < rounds; r++) {
    memcpy(buf, orig, n);
    size_t len = n;
    int k = 1 + (int)(rnd(&s) % 4);
    for (int i = 0; i < k; i++)
      len = mutate(&s, buf, len, cap);
    coil_diag d = {0};
    coil_graph *g = coil_graph_parse("fuzz.coil", buf, len, &d);
    if (!g) {
      cr_assert(strncmp(d.msg, "fuzz.coil", 9) == 0, "round %d: message without the file name: %s", r, d.msg);
      continue;
    }
    parsed++;
    char *text = coil_graph_print(g);
    coil_diag d2 = {0};
    coil_graph *g2 = coil_graph_parse("printed.coil", text, strlen(text), &d2);
    cr_assert_not_null(g2, "round %d: printed graph does not parse back: %s\n%s", r, d2.msg, text);
    char *text2 = coil_graph_print(g2);
    cr_assert_str_eq(text, text2, "round %d: print is not stable", r);
    free(text), free(text2);
    coil_graph_free(g);
    coil_graph_free(g2);
  }
  cr_log_info("%s: %d of %d mutants parsed", path, parsed, rounds);
  free(buf);
  free(orig);
}

Test(fuzz, graph_parser_mutants)
{
  const char *files[] = {"/examples/mlp.coil", "/examples/layernorm_gelu.coil",
                         "/examples/mixed_precision.coil", "/examples/softmax_rows.coil"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s%s", COIL_SOURCE_DIR, files[i]);
    fuzz_graph(path, 0x9e3779b97f4a7c15ull + i, 10000);
  }
}

Test(fuzz, torch_export_mutants)
{
  const char *path = COIL_SHARED_DIR "/torch-exports/e10_encoder_layer.coil";
  FILE *f = fopen(path, "rb");
  if (!f)
    cr_skip_test("%s not found", path);
  fclose(f);
  fuzz_graph(path, 42, 10000);
}

Test(fuzz, safetensors_mutants)
{
  size_t n;
  char *orig = slurp(COIL_SOURCE_DIR "/examples/mlp.weights.safetensors", &n);
  size_t cap = n + 256;
  char *buf = malloc(cap);
  uint64_t s = 7;
  for (int r = 0; r < 10000; r++) {
    memcpy(buf, orig, n);
    size_t len = n;
    /* mutate mostly inside the 8-byte length and the JSON header, where parsing happens */
    int k = 1 + (int)(rnd(&s) % 3);
    for (int i = 0; i < k; i++) {
      size_t hdr = 8 + 200;
      size_t at = rnd(&s) % (hdr < len ? hdr : len);
      if (rnd(&s) % 4 == 0)
        len = mutate(&s, buf, len, cap);
      else
        buf[at] = (char)(rnd(&s) & 0xff);
    }
    coil_tensor_list l = {0};
    coil_diag d = {0};
    if (coil_safetensors_read_mem("fuzz.safetensors", (const uint8_t *)buf, len, &l, &d) == 0)
      coil_tensor_list_free(&l);
    else
      cr_assert(strncmp(d.msg, "fuzz.safetensors", 16) == 0, "round %d: %s", r, d.msg);
  }
  free(buf);
  free(orig);
}
