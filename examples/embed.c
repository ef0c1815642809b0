/* embed.c — coil from a C program (docs/embedding.md): compile examples/mlp.coil for the
 * configured backend, bind a batch of 3 rows, allocate the outputs at the sizes coil reports and
 * run on memory this program owns. Build: cc embed.c -lcoil (the build tree makes
 * build/examples/coil-embed-example). Usage: coil-embed-example [GRAPH] */
#include <stdio.h>
#include <stdlib.h>

#include "coil/embed.h"

static char *
read_all(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = NULL;
  size_t cap = 0, n = 0, got;
  do {
    if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 4096)))
      abort();
    got = fread(buf + n, 1, cap - n, f);
    n += got;
  } while (got > 0);
  fclose(f);
  *len = n;
  return buf;
}

static coil_dltensor
f32(float *data, int ndim, int64_t *shape)
{
  return (coil_dltensor){.data = data, .device = {1 /* CPU */, 0}, .ndim = ndim, .dtype = {2, 32, 1}, .shape = shape};
}

int
main(int argc, char **argv)
{
  const char *path = argc > 1 ? argv[1] : "examples/mlp.coil";
  size_t len;
  char *text = read_all(path, &len);
  if (!text) {
    perror(path);
    return 1;
  }
  coil_diag d;
  coil_session *s = NULL;
  coil_model *m = NULL;
  coil_binding *b = NULL;
  int rc = coil_session_new(NULL, &s, &d); /* coil.ini and COIL_* as the coil tool reads them */
  if (!rc)
    rc = coil_model_compile(s, path, text, len, &m, &d);
  free(text);

  /* the inputs: x[3, 64] and the params, here filled with a pattern */
  static float x[3 * 64], w1[64 * 32], b1[32], w2[32 * 10], b2[10];
  float *all[] = {x, w1, b1, w2, b2};
  int sizes[] = {3 * 64, 64 * 32, 32, 32 * 10, 10};
  for (int t = 0; t < 5; t++)
    for (int i = 0; i < sizes[t]; i++)
      all[t][i] = (float)((i * 7 + t) % 13 - 6) / 16.0f;
  int64_t xs[] = {3, 64}, w1s[] = {64, 32}, b1s[] = {32}, w2s[] = {32, 10}, b2s[] = {10};
  coil_dltensor in[] = {f32(x, 2, xs), f32(w1, 2, w1s), f32(b1, 1, b1s), f32(w2, 2, w2s), f32(b2, 1, b2s)};
  if (!rc)
    rc = coil_model_bind(m, 5, in, &b, &d);

  /* the outputs, allocated here at the sizes the binding gives */
  void *data[7] = {x, w1, b1, w2, b2};
  int64_t numel[2] = {1, 1};
  for (int o = 0; !rc && o < 2; o++) {
    coil_dltensor y;
    coil_binding_output(b, o, &y);
    for (int k = 0; k < y.ndim; k++)
      numel[o] *= y.shape[k];
    data[5 + o] = calloc((size_t)numel[o], sizeof(float));
  }
  if (!rc)
    rc = coil_binding_run(b, data, NULL, &d);
  if (rc) {
    fprintf(stderr, "coil-embed-example: %s\n", d.msg);
  } else {
    const float *probs = data[5];
    double row0 = 0;
    for (int j = 0; j < 10; j++)
      row0 += probs[j];
    printf("backend %s: probs[3, 10], row 0 sums to %.6f; activity[0] = %.6f\n", coil_model_backend(m), row0,
           ((const float *)data[6])[0]);
  }
  free(data[5]);
  free(data[6]);
  coil_binding_free(b);
  coil_model_free(m);
  coil_session_free(s);
  return rc ? 1 : 0;
}
