/* hip.h — the hip plugin's internals: its dialects of the SDK's GPU emitter and what it knows
 * about AMD GPU archs (hip_codegen.c), shared by the plugin's table (hip_plugin.c). */
#ifndef COIL_HIP_H
#define COIL_HIP_H

#include <stdbool.h>
#include <stddef.h>

#include "coil/coil_gpu.h"
#include "coil/coil_gpu_run.h"
#include "coil/coil_plugin.h"
#include "hip_api.h"

/* The HIP dialect of the SDK's GPU emitter for a wavefront of `wave` lanes (64 or 32): kernels,
 * launch plans (coil_gpu_plan) and sources come from coil/coil_gpu.h with it. */
const coil_gpu_dialect *hip_dialect(int wave);

/* Whether arch names an AMD GPU target hiprtc takes as --offload-arch: gfx, then 3 or 4 digits
 * or lower-case hex letters (gfx90a, gfx908, gfx1030); no target features (":xnack-"). */
bool hip_arch_valid(const char *arch);
/* The wavefront of arch's kernels as hiprtc compiles them by default: 64 on GCN and CDNA
 * (gfx8, gfx9: gfx908, gfx90a, gfx942), 32 on RDNA (gfx10, gfx11: gfx1030, gfx1100). */
int hip_arch_wave(const char *arch);
/* The first AMD GPU's arch as the kernel driver reports it (KFD's topology in sysfs: no HIP
 * runtime is started, so a host may still fork), or gfx90a without one. */
void hip_default_arch(char *arch, size_t n);
/* Whether arch names an NVIDIA GPU as NVRTC takes it (sm_ then 2 or 3 digits, an optional a:
 * sm_90, sm_90a): the targets of platform = nvidia. */
bool hip_nvidia_arch_valid(const char *arch);

/* ---- the run-time wrapper (hip_run.c) ---- */

/* The code object of kernel k for arch in an artifact: k<k>-<arch>.co (an AMDGPU ELF, or a
 * cubin on the NVIDIA platform). */
#define HIP_CODE_OBJECT "k%d-%s.co"

/* The generated GEMM of dtype t (f16, bf16, f32, f64) for mm and bmm lines: kernels coil_gemm_<t>
 * and coil_gemm_<t>_small (coil/coil_gpu.h's coil_gpu_gemm_source with the default and the small
 * plan of the wavefront's dialect) in the code object gemm-<t>-<arch>.co. hip_gemm_line: whether
 * line l is such a call, and its dtype. */
#define HIP_GEMM_OBJECT "gemm-%s-%s.co"
#define HIP_GEMM_KERNEL "coil_gemm_%s"
#define HIP_GEMM_SMALL "_small"
bool hip_gemm_line(const coil_wir_program *p, const coil_line *l, coil_dtype *t);

enum { HIP_GEMM_AUTO, HIP_GEMM_GENERATED, HIP_GEMM_LIBRARY }; /* option gemm */

typedef struct {
  int gemm;                  /* HIP_GEMM_*: mm and bmm through the platform's BLAS where it loads */
  bool async;                /* option sync = false: runs on device tensors return once queued */
  bool graphs;               /* coil.graph_capture: runs captured into a hipGraph, replayed */
  const coil_host_api *host; /* for the log (may be NULL) */
} hip_load_options;

/* Loads the artifact in dir for arch (one of those it was compiled for) on platform pf. */
coil_error *hip_load(hip_platform pf, const char *arch, const hip_load_options *o, const char *dir, coil_artifact **out);
coil_error *hip_run(coil_artifact *a, const coil_plugin_run_args *args);
void hip_artifact_free(coil_artifact *a);

#endif
