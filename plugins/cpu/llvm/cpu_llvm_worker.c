/* cpu_llvm_worker.c — coil-cpu-llvm, the cpu plugin's LLVM compile worker (cpu_llvm.h says why
 * it is a process of its own). The plugin starts it with a socket on fd 3, a memory file for
 * the IR on fd 4 and another for stderr on fd 2; it loads cpu-llvm.so from its own directory,
 * says hello, then compiles one program a request until the socket closes (the plugin's process
 * ended). Nothing else: it writes no file, and a fatal error inside LLVM ends it (_exit(70))
 * with LLVM's reason on stderr, for the plugin to report. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cpu_llvm.h"

#define WIR_MAX ((uint64_t)1 << 30) /* a program's text: more is not a request of the plugin's */

static bool
recv_all(int fd, void *buf, size_t n)
{
  for (char *p = buf; n > 0;) {
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return false;
    p += k, n -= (size_t)k;
  }
  return true;
}

/* cpu-llvm.so's api, from this executable's directory */
static const cpu_llvm_api *
load_api(void)
{
  char self[PATH_MAX], path[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "cannot find the worker's own file: %s\n", strerror(errno));
    return NULL;
  }
  self[n] = 0;
  char *slash = strrchr(self, '/');
  snprintf(path, sizeof path, "%.*s/cpu-llvm.so", slash ? (int)(slash - self) : 1, slash ? self : ".");
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    return NULL;
  }
  cpu_llvm_api_fn get = (cpu_llvm_api_fn)(uintptr_t)dlsym(lib, "coil_cpu_llvm_api");
  const cpu_llvm_api *api = get ? get() : NULL;
  if (!api || api->version != CPU_LLVM_API_VERSION) {
    fprintf(stderr, "%s is not this worker's LLVM code path (version mismatch): reinstall coil\n", path);
    return NULL;
  }
  return api;
}

/* Empties a memory file for the next compile (stderr's offset too: it shares the file). */
static void
reset(int fd)
{
  if (ftruncate(fd, 0) == 0)
    lseek(fd, 0, SEEK_SET);
}

int
main(void)
{
  const int fd = CPU_LLVM_WORKER_SOCKET;
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core); /* an abort inside LLVM (out of memory) leaves no core file */
  const cpu_llvm_api *api = load_api();
  if (!api)
    return 1;
  api->child();
  api->prepare(false);
  static cpu_llvm_hello hello;
  hello.magic = CPU_LLVM_WORKER_MAGIC;
  hello.api_version = CPU_LLVM_API_VERSION;
  snprintf(hello.llvm_version, sizeof hello.llvm_version, "%s", api->llvm_version);
  api->target(false, hello.target[0], sizeof hello.target[0]);
  api->target(true, hello.target[1], sizeof hello.target[1]);
  if (!cpu_llvm_send_all(fd, &hello, sizeof hello))
    return 1;
  for (;;) {
    cpu_llvm_request rq;
    if (!recv_all(fd, &rq, sizeof rq))
      return 0; /* the plugin's process ended */
    if (rq.magic != CPU_LLVM_WORKER_MAGIC || rq.wir_len > WIR_MAX || !memchr(rq.tag, 0, sizeof rq.tag)) {
      fprintf(stderr, "a request that is not the cpu plugin's\n");
      return 1;
    }
    char *wir = malloc(rq.wir_len + 1);
    if (!wir || !recv_all(fd, wir, rq.wir_len))
      return 1;
    wir[rq.wir_len] = 0;
    reset(2);
    reset(CPU_LLVM_WORKER_IR);
    static cpu_llvm_reply rp;
    memset(&rp, 0, sizeof rp);
    rp.magic = CPU_LLVM_WORKER_MAGIC;
    coil_diag d = {0};
    void *obj = NULL;
    size_t size = 0;
    char *ir = NULL;
    coil_wir_program *p = coil_wir_parse("program.wir", wir, (size_t)rq.wir_len, &d);
    if (!p) {
      rp.rc = -1;
      snprintf(rp.msg, sizeof rp.msg, "cpu (llvm): the compile worker cannot read the program: %.1900s", d.msg);
    } else {
      rp.rc = api->compile(p, rq.portable != 0, rq.tag, &obj, &size, &ir, CPU_LLVM_WORKER_IR, rp.times,
                           sizeof rp.times, &d);
      snprintf(rp.msg, sizeof rp.msg, "%s", rp.rc ? d.msg : "");
    }
    rp.ir_len = ir ? strlen(ir) : 0;
    rp.obj_len = rp.rc ? 0 : size;
    bool sent = cpu_llvm_send_all(fd, &rp, sizeof rp) && cpu_llvm_send_all(fd, ir ? ir : "", rp.ir_len) &&
                cpu_llvm_send_all(fd, obj ? obj : "", rp.obj_len);
    free(ir);
    free(obj);
    free(wir);
    coil_wir_free(p);
    if (!sent)
      return 0;
  }
}
