/* fx_emit.c — fx-emit: the fx plugin's emitter run over stored Wrapper IR programs, so that the
 * test can check every op case without compiling graphs: each FILE.wir is parsed, verified and
 * written as the plugin writes it (kernels.py, graph.py, program.wir, manifest.json) into
 * OUT_DIR/NAME/, NAME the file's name less .wir. A program the plugin refuses as not supported
 * is listed on stdout ("unsupported: NAME: why") and written nowhere; anything else that fails
 * is an error.
 * Usage: fx-emit OUT_DIR FILE.wir...   (exit 0: all written or unsupported; 1: a failure) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "coil/coil_sdk.h"
#include "../fx.h"

int
main(int argc, char **argv)
{
  if (argc < 2) {
    fprintf(stderr, "usage: fx-emit OUT_DIR FILE.wir...\n");
    return 2;
  }
  int written = 0, unsupported = 0, failed = 0;
  for (int i = 2; i < argc; i++) {
    size_t len = 0;
    char *text = coil_sdk_read_file(argv[i], (size_t)256 << 20, &len);
    coil_diag d = {0};
    coil_wir_program *p = text ? coil_wir_parse(argv[i], text, len, &d) : NULL;
    free(text);
    if (!p || coil_wir_verify(p, &d) != 0) {
      fprintf(stderr, "FAIL: %s: %s\n", argv[i], d.msg);
      coil_wir_free(p);
      failed++;
      continue;
    }
    const char *base = strrchr(argv[i], '/');
    base = base ? base + 1 : argv[i];
    char name[512], dir[1200];
    snprintf(name, sizeof name, "%.*s", (int)(strlen(base) > 4 ? strlen(base) - 4 : strlen(base)), base);
    snprintf(dir, sizeof dir, "%s/%s", argv[1], name);
    coil_error *e = fx_check_program(p);
    if (!e) {
      mkdir(dir, 0700);
      e = fx_write(p, dir);
    }
    if (e && coil_sdk_error_code(e) == COIL_ERR_UNSUPPORTED) {
      printf("unsupported: %s: %s\n", name, coil_sdk_error_message(e));
      unsupported++;
    } else if (e) {
      fprintf(stderr, "FAIL: %s: %s\n", argv[i], coil_sdk_error_message(e));
      failed++;
    } else {
      written++;
    }
    coil_sdk_error_free(e);
    coil_wir_free(p);
  }
  printf("fx-emit: %d programs written, %d not supported, %d failed\n", written, unsupported, failed);
  return failed ? 1 : 0;
}
