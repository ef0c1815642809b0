/* stub.c — error objects and a minimal working lifecycle for the broken test plugins. */
#include <stdio.h>
#include <stdlib.h>

#include "stub.h"

struct coil_error {
  coil_error_code code;
  const char *msg; /* static; NULL on purpose in error_no_message */
};

struct coil_plugin {
  int unused;
};

/* Returned when malloc fails: needs no memory, and freeing it does nothing. */
static struct coil_error out_of_memory = {COIL_ERR_OUT_OF_MEMORY, "out of memory"};

coil_error *
stub_error(coil_error_code code, const char *msg)
{
  coil_error *e = malloc(sizeof *e);
  if (!e)
    return &out_of_memory;
  e->code = code;
  e->msg = msg;
  return e;
}

coil_error_code
stub_error_code(const coil_error *err)
{
  return err->code;
}

const char *
stub_error_message(const coil_error *err)
{
  return err->msg;
}

void
stub_error_free(coil_error *err)
{
  if (err != &out_of_memory)
    free(err);
}

coil_error *
stub_create(const coil_plugin_create_args *args, coil_plugin **out)
{
  coil_plugin *p = calloc(1, sizeof *p);
  if (!p)
    return &out_of_memory;
  *out = p;
  return NULL;
}

void
stub_destroy(coil_plugin *self)
{
  free(self);
}

coil_support
stub_supports(const coil_plugin *self, const char *op, coil_dtype dtype)
{
  return COIL_UNSUPPORTED;
}

int
stub_write_manifest(const char *dir, const char *plugin)
{
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, COIL_ARTIFACT_MANIFEST) >= (int)sizeof path)
    return -1;
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f, "{\"plugin\": \"%s\", \"plugin_version\": \"0.1.0\", \"wir_version\": \"%d.%d\", "
             "\"files\": []}\n", plugin, COIL_WIR_VERSION_MAJOR, COIL_WIR_VERSION_MINOR);
  return fclose(f) == 0 ? 0 : -1;
}

coil_error *
stub_compile(coil_plugin *self, const coil_plugin_compile_args *args)
{
  if (stub_write_manifest(args->artifact_dir, "stub") < 0)
    return stub_error(COIL_ERR_IO, "cannot write the manifest");
  return NULL;
}
