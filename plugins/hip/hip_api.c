/* hip_api.c — dlopen of hiprtc (hip_api.h). */
#include "hip_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Opens the first of names found in $COIL_ROCM_HOME/lib, /opt/rocm/lib, then the dynamic
 * linker's own path. */
static void *
open_first(const char *const *names, int n, char *path, size_t pn)
{
  const char *home = getenv("COIL_ROCM_HOME");
  const char *dirs[] = {home && *home ? home : NULL, "/opt/rocm"};
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < n && dirs[d]; i++) {
      snprintf(path, pn, "%s/lib/%s", dirs[d], names[i]);
      void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (h)
        return h;
    }
  for (int i = 0; i < n; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      snprintf(path, pn, "%s", names[i]);
      return h;
    }
  }
  return NULL;
}

#define SYM(lib, field, name)                                        \
  do {                                                               \
    *(void **)&(lib).field = dlsym(handle, name);                    \
    if (!(lib).field)                                                \
      return "a function is missing from the library: " name;       \
  } while (0)

typedef struct {
  hip_rtc rtc;
  const char *why;
  char path[512];
} rtc_state;

static rtc_state rtc;
static pthread_once_t rtc_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t rtc_mutex = PTHREAD_MUTEX_INITIALIZER; /* the library's state is global too */

/* ROCm 6 has libhiprtc.so.6 of its own; ROCm 5 keeps hiprtc in libamdhip64 */
static const char *
load_rtc(void)
{
  static const char *const names[] = {"libhiprtc.so.6", "libamdhip64.so.5", "libhiprtc.so", "libamdhip64.so"};
  void *handle = open_first(names, 4, rtc.path, sizeof rtc.path);
  if (!handle)
    return "hiprtc not found (looked for libhiprtc.so.6 and libamdhip64.so.5 in $COIL_ROCM_HOME/lib, /opt/rocm/lib "
           "and the library path; Debian 12: apt-get install libamdhip64-dev rocm-device-libs libamd-comgr-dev)";
  rtc.rtc.path = rtc.path;
  SYM(rtc.rtc, Version, "hiprtcVersion");
  SYM(rtc.rtc, GetErrorString, "hiprtcGetErrorString");
  SYM(rtc.rtc, CreateProgram, "hiprtcCreateProgram");
  SYM(rtc.rtc, CompileProgram, "hiprtcCompileProgram");
  SYM(rtc.rtc, GetProgramLogSize, "hiprtcGetProgramLogSize");
  SYM(rtc.rtc, GetProgramLog, "hiprtcGetProgramLog");
  SYM(rtc.rtc, GetCodeSize, "hiprtcGetCodeSize");
  SYM(rtc.rtc, GetCode, "hiprtcGetCode");
  SYM(rtc.rtc, DestroyProgram, "hiprtcDestroyProgram");
  return NULL;
}

static void
rtc_init(void)
{
  rtc.why = load_rtc();
}

const hip_rtc *
hip_rtc_get(const char **why)
{
  pthread_once(&rtc_once, rtc_init);
  if (rtc.why && why)
    *why = rtc.why;
  return rtc.why ? NULL : &rtc.rtc;
}

void
hip_rtc_lock(void)
{
  pthread_mutex_lock(&rtc_mutex);
}

void
hip_rtc_unlock(void)
{
  pthread_mutex_unlock(&rtc_mutex);
}
