/* gpu_graph.c — reduce-overhead for the SDK's GPU executor (coil/coil_gpu_run.h): a run captured
 * into a graph by the plugin's runtime, replayed while the binding holds. Moved out of the cuda
 * plugin so hip's hipGraph runs the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_gpu_run.h"

typedef struct {
  int32_t dtype, rank, device_type;
  int64_t sizes[COIL_MAX_RANK], strides[COIL_MAX_RANK];
  void *addr;        /* the caller's data at capture */
  bool is_static;    /* the graph uses buf; copies around each replay */
  bool mutated;      /* an input the program writes (copy_back) */
  coil_gpu_ptr buf;
  size_t bytes;      /* the tensor's extent */
  coil_plugin_tensor proxy;
} gslot;

struct coil_gpu_graph {
  size_t nin, n;
  gslot *slots;
  void *exec;
};

static size_t
tensor_bytes(const coil_plugin_tensor *t)
{
  int64_t hi = 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->sizes[d] == 0)
      return 0;
    hi += (t->sizes[d] - 1) * t->strides[d];
  }
  return (size_t)(hi + 1) * coil_dtype_size((coil_dtype)t->dtype);
}

static const coil_plugin_tensor *
slot_tensor(const coil_plugin_run_args *args, size_t i)
{
  return i < args->ninputs ? args->inputs[i] : args->outputs[i - args->ninputs];
}

void
coil_gpu_graph_free(const coil_gpu_capture *c, void *user, coil_gpu_graph **gp)
{
  coil_gpu_graph *g = *gp;
  if (!g)
    return;
  if (g->exec)
    c->destroy(user, g->exec);
  for (size_t i = 0; i < g->n; i++)
    if (g->slots[i].buf)
      c->static_free(user, g->slots[i].buf);
  free(g->slots);
  free(g);
  *gp = NULL;
}

static bool
same_binding(const coil_gpu_graph *g, const coil_plugin_run_args *args)
{
  if (g->nin != args->ninputs || g->n != args->ninputs + args->noutputs)
    return false;
  for (size_t i = 0; i < g->n; i++) {
    const coil_plugin_tensor *t = slot_tensor(args, i);
    const gslot *s = &g->slots[i];
    if (!t || t->dtype != s->dtype || t->rank != s->rank || t->device_type != s->device_type ||
        t->rank < 0 || t->rank > COIL_MAX_RANK)
      return false;
    for (int d = 0; d < t->rank; d++)
      if (t->sizes[d] != s->sizes[d] || t->strides[d] != s->strides[d])
        return false;
  }
  return true;
}

static coil_error *
graph_fail(const coil_gpu_capture *c, void *user, const coil_wir_program *p, int code, const char *call)
{
  const char *s = c->error_string ? c->error_string(user, code) : NULL;
  return coil_sdk_error(COIL_ERR_RUNTIME, "%s: %s: %s failed: %s (%d)", c->name, p->name, call, s ? s : "?", code);
}

/* Copies between a caller's tensor and its static buffer (the whole extent, gaps included). */
static int
slot_copy(const coil_gpu_capture *c, void *user, const gslot *s, const coil_plugin_tensor *t, bool in)
{
  if (!s->bytes)
    return 0;
  uintptr_t data = (uintptr_t)t->data;
  if (t->device_type == c->device_type)
    return in ? c->copy(user, COIL_GPU_ON_DEVICE, s->buf, data, s->bytes)
              : c->copy(user, COIL_GPU_ON_DEVICE, data, s->buf, s->bytes);
  return in ? c->copy(user, COIL_GPU_TO_DEVICE, s->buf, data, s->bytes)
            : c->copy(user, COIL_GPU_TO_HOST, data, s->buf, s->bytes);
}

/* Captures the run with the slots' proxies. */
static coil_error *
capture(const coil_gpu_capture *c, void *user, const coil_wir_program *p, coil_gpu_graph *g, bool *refuse)
{
  const coil_plugin_tensor **ptrs = calloc(g->n + 1, sizeof *ptrs);
  if (!ptrs)
    return coil_sdk_out_of_memory();
  for (size_t i = 0; i < g->n; i++) {
    gslot *s = &g->slots[i];
    if (s->is_static && !s->buf && s->bytes) {
      int r = c->static_alloc(user, s->bytes, &s->buf);
      if (r) {
        free(ptrs);
        return graph_fail(c, user, p, r, "allocating a static buffer");
      }
    }
    s->proxy = (coil_plugin_tensor){.struct_size = sizeof s->proxy,
                                    .data = s->is_static ? (void *)(uintptr_t)s->buf : s->addr, .dtype = s->dtype,
                                    .rank = s->rank, .sizes = s->sizes, .strides = s->strides,
                                    .device_type = c->device_type};
    ptrs[i] = &s->proxy;
  }
  coil_plugin_run_args pa = {.struct_size = sizeof pa, .ninputs = g->nin, .inputs = ptrs, .noutputs = g->n - g->nin,
                             .outputs = ptrs + g->nin};
  coil_error *e = c->begin(user);
  if (e) {
    free(ptrs);
    *refuse = true;
    return e;
  }
  coil_error *ran = c->run(user, &pa);
  free(ptrs);
  e = c->end(user, ran ? NULL : &g->exec);
  if (ran) {
    if (e)
      coil_sdk_error_free(e);
    *refuse = coil_sdk_error_code(ran) != COIL_ERR_INVALID_ARGUMENT; /* bad input is the caller's */
    return ran;
  }
  *refuse = e != NULL;
  return e;
}

coil_error *
coil_gpu_graph_run(const coil_gpu_capture *c, void *user, const coil_wir_program *p, coil_gpu_graph **gp,
                   const coil_plugin_run_args *args, bool *refuse)
{
  *refuse = false;
  size_t n = args->ninputs + args->noutputs;
  for (size_t i = 0; i < n; i++) {
    const coil_plugin_tensor *t = slot_tensor(args, i);
    if (!t || t->rank < 0 || t->rank > COIL_MAX_RANK || (t->device_type != COIL_DEVICE_CPU && t->device_type != c->device_type))
      return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "%s: %s: %s %zu is not a tensor on the host or the GPU", c->name,
                            p->name, i < args->ninputs ? "input" : "output", i < args->ninputs ? i : i - args->ninputs);
    for (int d = 0; d < t->rank; d++)
      if (t->sizes[d] < 0 || t->strides[d] < 0)
        return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, "%s: %s: a negative size or stride", c->name, p->name);
  }
  coil_gpu_graph *g = *gp;
  bool again = false;
  if (g && !same_binding(g, args))
    coil_gpu_graph_free(c, user, gp), g = NULL;
  if (!g) {
    g = calloc(1, sizeof *g);
    if (!g || !(g->slots = calloc(n + 1, sizeof *g->slots))) {
      free(g);
      return coil_sdk_out_of_memory();
    }
    g->nin = args->ninputs, g->n = n;
    for (size_t i = 0; i < n; i++) {
      const coil_plugin_tensor *t = slot_tensor(args, i);
      gslot *s = &g->slots[i];
      s->dtype = t->dtype, s->rank = t->rank, s->device_type = t->device_type;
      for (int d = 0; d < t->rank; d++)
        s->sizes[d] = t->sizes[d], s->strides[d] = t->strides[d];
      s->addr = t->data;
      s->is_static = t->device_type != c->device_type;
      s->bytes = tensor_bytes(t);
    }
    for (int l = 0; l < p->nlines; l++)
      if (p->lines[l].kind == COIL_LINE_COPY_BACK)
        for (int i = 0; i < p->ninputs && (size_t)i < n; i++)
          if (p->inputs[i].buffer == p->lines[l].buffer)
            g->slots[i].mutated = true;
    *gp = g;
    again = true;
  }
  for (size_t i = 0; i < n; i++) {
    gslot *s = &g->slots[i];
    if (!s->is_static && slot_tensor(args, i)->data != s->addr)
      s->is_static = again = true; /* moved since capture: through a static buffer from now on */
  }
  if (again) {
    if (g->exec)
      c->destroy(user, g->exec), g->exec = NULL;
    coil_error *e = capture(c, user, p, g, refuse);
    if (e) {
      coil_gpu_graph_free(c, user, gp);
      return e;
    }
  }
  int r = 0;
  for (size_t i = 0; i < g->nin && !r; i++)
    if (g->slots[i].is_static)
      r = slot_copy(c, user, &g->slots[i], args->inputs[i], true);
  if (!r)
    r = c->launch(user, g->exec);
  for (size_t i = 0; i < n && !r; i++)
    if (g->slots[i].is_static && (i >= g->nin || g->slots[i].mutated))
      r = slot_copy(c, user, &g->slots[i], slot_tensor(args, i), false);
  return r ? graph_fail(c, user, p, r, "a replay (copy or graph launch)") : NULL;
}
