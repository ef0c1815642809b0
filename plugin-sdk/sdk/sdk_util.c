/* sdk_util.c — what every plugin needs around the ABI (coil/coil_sdk.h): error objects, and
 * artifact files written atomically and read back whole. A plugin that links coil-sdk points its
 * table's error_code, error_message and error_free at the functions here. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_sdk.h"

struct coil_error {
  coil_error_code code;
  char msg[4096];
};

/* Returned when even the error cannot be allocated; never freed. */
static coil_error out_of_memory = {COIL_ERR_OUT_OF_MEMORY, "out of memory"};

coil_error *
coil_sdk_error(coil_error_code code, const char *fmt, ...)
{
  coil_error *e = malloc(sizeof *e);
  if (!e)
    return &out_of_memory;
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return e;
}

coil_error *
coil_sdk_out_of_memory(void)
{
  return &out_of_memory;
}

coil_error_code
coil_sdk_error_code(const coil_error *err)
{
  return err->code;
}

const char *
coil_sdk_error_message(const coil_error *err)
{
  return err->msg;
}

void
coil_sdk_error_free(coil_error *err)
{
  if (err != &out_of_memory)
    free(err);
}

coil_error *
coil_sdk_write_file(const char *dir, const char *name, const char *text)
{
  char path[4096], tmp[4200];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "artifact path too long: %s", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f)
    return coil_sdk_error(COIL_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
  int bad = fputs(text, f) < 0;
  int e = errno;
  if (fclose(f) != 0 && !bad)
    bad = 1, e = errno;
  if (!bad && rename(tmp, path) != 0)
    bad = 1, e = errno;
  if (bad) {
    remove(tmp);
    return coil_sdk_error(COIL_ERR_IO, "cannot write %s: %s", path, strerror(e)); /* ENOSPC, EIO */
  }
  return NULL;
}

char *
coil_sdk_read_file(const char *path, size_t max, size_t *len)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  /* the buffer grows with what is read, so a small file costs a small allocation whatever max
   * is (a memory limit must not fail the read of a 2 KB program) */
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  bool fail = !buf;
  while (!fail) {
    if (n == cap) {
      if (cap > max) { /* more than max bytes: refused, never truncated */
        fail = true;
        errno = EFBIG;
        break;
      }
      size_t ncap = cap > max / 2 ? max + 1 : 2 * cap;
      char *grown = realloc(buf, ncap + 1);
      if (!grown) {
        fail = true;
        break;
      }
      buf = grown;
      cap = ncap;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      fail = ferror(f) != 0;
      break;
    }
  }
  fclose(f);
  if (fail || n > max) {
    free(buf);
    if (n > max)
      errno = EFBIG;
    return NULL;
  }
  buf[n] = 0;
  if (len)
    *len = n;
  return buf;
}

coil_error *
coil_sdk_read_program(const char *prefix, const char *dir, coil_wir_program **out)
{
  char path[4200];
  size_t len = 0;
  *out = NULL;
  snprintf(path, sizeof path, "%s/program.wir", dir);
  char *text = coil_sdk_read_file(path, 256u << 20, &len);
  if (!text)
    return coil_sdk_error(COIL_ERR_IO, "%s: cannot read %s", prefix, path);
  coil_diag d = {0};
  coil_wir_program *p = coil_wir_parse(path, text, len, &d);
  free(text);
  if (!p || coil_wir_verify(p, &d) != 0) {
    coil_wir_free(p);
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "%s: %s", prefix, d.msg);
  }
  *out = p;
  return NULL;
}

char *
coil_sdk_compile_text(const coil_plugin_compile_args *args)
{
  if (COIL_STRUCT_HAS(args, coil_plugin_compile_args, program_text_len) && args->program_text) {
    char *t = malloc(args->program_text_len + 1);
    if (t) {
      memcpy(t, args->program_text, args->program_text_len);
      t[args->program_text_len] = 0;
    }
    return t;
  }
  return args->program ? coil_wir_print(args->program) : NULL;
}

coil_error *
coil_sdk_compile_program(const char *prefix, const coil_plugin_compile_args *args, coil_wir_program **out)
{
  *out = NULL;
  char *text = coil_sdk_compile_text(args);
  if (!text)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "%s: compile was given no program (neither program_text nor program)",
                          prefix);
  coil_diag d = {0};
  coil_wir_program *p = coil_wir_parse("program_text", text, strlen(text), &d);
  free(text);
  if (!p || coil_wir_verify(p, &d) != 0) {
    coil_wir_free(p);
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "%s: the program handed to compile: %s", prefix, d.msg);
  }
  *out = p;
  return NULL;
}
