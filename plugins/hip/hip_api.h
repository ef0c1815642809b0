/* hip_api.h — the part of ROCm the hip plugin calls today, hiprtc, loaded with dlopen at run time:
 * nothing links against ROCm, and the plugin builds without its headers (the few types are
 * declared here, with hiprtc.h's values).
 *
 * Debian 12's ROCm 5.2 ships hiprtc inside libamdhip64.so.5 (beside libhiprtc-builtins.so.5); a
 * later ROCm has its own libhiprtc.so. They are looked for in $COIL_ROCM_HOME/lib, /opt/rocm/lib
 * and the system's search path. hiprtc compiles without an AMD GPU. The loader is thread-safe,
 * loads once per process and never unloads. */
#ifndef COIL_HIP_API_H
#define COIL_HIP_API_H

#include <stddef.h>

typedef int hiprtcResult; /* 0: HIPRTC_SUCCESS */
typedef struct _hiprtcProgram *hiprtcProgram;

typedef struct hip_rtc {
  const char *path; /* the library loaded */
  hiprtcResult (*Version)(int *major, int *minor);
  const char *(*GetErrorString)(hiprtcResult r);
  hiprtcResult (*CreateProgram)(hiprtcProgram *p, const char *src, const char *name, int nheaders,
                                const char **headers, const char **include_names);
  hiprtcResult (*CompileProgram)(hiprtcProgram p, int nopts, const char **opts);
  hiprtcResult (*GetProgramLogSize)(hiprtcProgram p, size_t *n);
  hiprtcResult (*GetProgramLog)(hiprtcProgram p, char *log);
  hiprtcResult (*GetCodeSize)(hiprtcProgram p, size_t *n); /* the code object (an AMDGPU ELF) */
  hiprtcResult (*GetCode)(hiprtcProgram p, char *code);
  hiprtcResult (*DestroyProgram)(hiprtcProgram *p);
} hip_rtc;

/* hiprtc, loaded on first use; NULL with why (static text) when it cannot be. */
const hip_rtc *hip_rtc_get(const char **why);
/* ROCm 5.2's hiprtc is not thread-safe (two programs compiled at once crash in comgr): every
 * program's create .. destroy is held under this process-wide lock. */
void hip_rtc_lock(void);
void hip_rtc_unlock(void);

#endif
