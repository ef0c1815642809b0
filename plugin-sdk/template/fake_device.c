/* fake_device.c — the template's device: see fake_device.h. A vendor's plugin keeps the shape
 * of these functions and replaces their insides with its driver's allocate, copy, launch,
 * queue and event calls. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coil/coil_sdk.h"
#include "fake_device.h"

#if COIL_PLUGIN_ABI_MINOR >= 4

#define NAME "template"
/* Fake mode's pointers are the real ones with their top 16 bits flipped: not canonical on
 * x86-64 or arm64, so dereferencing one faults, yet byte arithmetic on them still works. */
#define SCRAMBLE ((uintptr_t)0x5a5a << 48)
#define ALIGNMENT 64

typedef struct block {
  char *base; /* real memory */
  size_t bytes;
} block;

/* Queued work: a run (with its own copies of the tensors) or a copy. */
typedef struct work {
  struct work *next;
  uint64_t seq;              /* its place in the stream */
  coil_artifact *art;        /* a run: art, run_host, args pointing into tensors */
  fake_run_fn *run_host;
  coil_plugin_run_args args;
  coil_plugin_tensor *tensors;
  const coil_plugin_tensor **tensor_ptrs;
  int64_t (*layouts)[2][COIL_MAX_RANK];
  void *dst;                 /* a copy: real pointers */
  const void *src;
  size_t bytes;
} work;

struct coil_stream {
  fake_device *fd;
  struct coil_stream *next;  /* the device's list */
  work *head, *tail;
  uint64_t queued, done;     /* seq of the last work queued, and of the last done */
  coil_error *err;           /* the first error since the last sync; later work is skipped */
};

struct coil_event {
  coil_stream *stream;
  uint64_t seq; /* the work before it */
};

/* Runs of different artifacts may come from several threads at once, and so may the memory,
 * stream and event calls: every entry point holds the lock (none calls another). */
struct fake_device {
  pthread_mutex_t lock;
  bool fake;
  block *blocks;
  size_t nblocks, cap;
  coil_stream *streams;
};

fake_device *
fake_device_new(bool fake)
{
  fake_device *fd = calloc(1, sizeof *fd);
  if (fd && pthread_mutex_init(&fd->lock, NULL) != 0) {
    free(fd);
    return NULL;
  }
  if (fd)
    fd->fake = fake;
  return fd;
}

static void drain(coil_stream *s, uint64_t upto);
static void stream_destroy(fake_device *fd, coil_stream *s);

void
fake_device_free(fake_device *fd)
{
  if (!fd)
    return;
  while (fd->streams)
    stream_destroy(fd, fd->streams);
  for (size_t i = 0; i < fd->nblocks; i++)
    free(fd->blocks[i].base);
  free(fd->blocks);
  pthread_mutex_destroy(&fd->lock);
  free(fd);
}

/* An entry point's body, run under the device's lock. */
#define LOCKED(fd, call)                                                                      \
  do {                                                                                        \
    pthread_mutex_lock(&(fd)->lock);                                                          \
    coil_error *locked_e_ = (call);                                                           \
    pthread_mutex_unlock(&(fd)->lock);                                                        \
    return locked_e_;                                                                         \
  } while (0)

/* ---- pointers ---- */

static void *
handle_of(const fake_device *fd, void *p)
{
  return fd->fake ? (void *)((uintptr_t)p ^ SCRAMBLE) : p;
}

static char *
real_of(const fake_device *fd, const void *h)
{
  return fd->fake ? (char *)((uintptr_t)h ^ SCRAMBLE) : (char *)(uintptr_t)h;
}

/* The real address of [h, h+bytes), which must lie in one live allocation; NULL if not. */
static char *
resolve(const fake_device *fd, const void *h, size_t bytes)
{
  char *p = real_of(fd, h);
  for (size_t i = 0; i < fd->nblocks; i++) {
    const block *b = &fd->blocks[i];
    if (p >= b->base && (size_t)(p - b->base) <= b->bytes && bytes <= b->bytes - (size_t)(p - b->base))
      return p;
  }
  return NULL;
}

/* ---- devices and memory ---- */

int32_t
fake_device_count(coil_plugin *self)
{
  (void)self;
  return 1;
}

coil_error *
fake_device_info(coil_plugin *self, int32_t device, coil_device_info *out)
{
  const fake_device *fd = template_device(self);
  if (device != 0)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": device %d does not exist (there is "
                          "one: 0)", (int)device);
  if (!COIL_STRUCT_HAS(out, coil_device_info, flags))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": device_info's struct is too small");
  out->name = fd->fake ? NAME " fake device (host memory behind scrambled pointers)"
                       : NAME " host memory";
  out->device_type = fd->fake ? COIL_DEVICE_EXT_DEV : COIL_DEVICE_CPU;
  out->device_index = 0;
  out->memory_bytes = (uint64_t)1 << 30;
  out->alignment = ALIGNMENT;
  out->flags = fd->fake ? 0 : COIL_DEVICE_HOST_VISIBLE;
  return NULL;
}

static coil_error *
mem_alloc_locked(coil_plugin *self, int32_t device, size_t bytes, void **out)
{
  fake_device *fd = template_device(self);
  if (device != 0)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": mem_alloc on device %d (there is "
                          "one: 0)", (int)device);
  if (bytes > ((size_t)1 << 30))
    return coil_sdk_error(COIL_ERR_OUT_OF_MEMORY, NAME ": mem_alloc of %zu bytes: the device "
                          "has 1 GiB", bytes);
  if (fd->nblocks == fd->cap) {
    size_t cap = fd->cap ? 2 * fd->cap : 16;
    block *nb = realloc(fd->blocks, cap * sizeof *nb);
    if (!nb)
      return coil_sdk_out_of_memory();
    fd->blocks = nb, fd->cap = cap;
  }
  /* One byte more, so that a 0-byte allocation is a unique pointer and its end is inside. */
  char *p = aligned_alloc(ALIGNMENT, (bytes + 1 + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT);
  if (!p)
    return coil_sdk_error(COIL_ERR_OUT_OF_MEMORY, NAME ": mem_alloc of %zu bytes failed", bytes);
  fd->blocks[fd->nblocks++] = (block){p, bytes};
  *out = handle_of(fd, p);
  return NULL;
}

coil_error *
fake_mem_alloc(coil_plugin *self, int32_t device, size_t bytes, void **out)
{
  LOCKED(template_device(self), mem_alloc_locked(self, device, bytes, out));
}

void
fake_mem_free(coil_plugin *self, int32_t device, void *ptr)
{
  fake_device *fd = template_device(self);
  (void)device;
  char *p = real_of(fd, ptr);
  pthread_mutex_lock(&fd->lock);
  for (size_t i = 0; ptr && i < fd->nblocks; i++)
    if (fd->blocks[i].base == p) {
      free(p);
      fd->blocks[i] = fd->blocks[--fd->nblocks];
      break;
    }
  pthread_mutex_unlock(&fd->lock);
}

static coil_error *
queue(coil_stream *s, work *w)
{
  w->seq = ++s->queued;
  if (s->tail)
    s->tail->next = w;
  else
    s->head = w;
  s->tail = w;
  return NULL;
}

/* Whether s is a stream of fd's (the host may hand over anything). */
static bool
ours(const fake_device *fd, const coil_stream *s)
{
  for (const coil_stream *t = fd->streams; t; t = t->next)
    if (t == s)
      return true;
  return false;
}

/* Synchronous work waits for everything queued on the device. */
static coil_error *
sync_all(fake_device *fd)
{
  coil_error *e = NULL;
  for (coil_stream *s = fd->streams; s; s = s->next) {
    drain(s, s->queued);
    if (!e && s->err) {
      e = s->err;
      s->err = NULL;
    }
  }
  return e;
}

static coil_error *
mem_copy_locked(coil_plugin *self, const coil_mem_copy_args *a)
{
  fake_device *fd = template_device(self);
  if (!COIL_STRUCT_HAS(a, coil_mem_copy_args, bytes) || a->device != 0)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": mem_copy: bad arguments or device");
  coil_stream *s = COIL_STRUCT_HAS(a, coil_mem_copy_args, stream) ? a->stream : NULL;
  if (s && !ours(fd, s))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": mem_copy on a stream this instance "
                          "did not create");
  if (!a->bytes)
    return NULL;
  bool to_dev = a->kind != COIL_COPY_DEVICE_TO_HOST, from_dev = a->kind != COIL_COPY_HOST_TO_DEVICE;
  if (a->kind < COIL_COPY_HOST_TO_DEVICE || a->kind > COIL_COPY_DEVICE_TO_DEVICE)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": mem_copy of kind %d", (int)a->kind);
  char *dst = to_dev ? resolve(fd, a->dst, a->bytes) : a->dst;
  const char *src = from_dev ? resolve(fd, a->src, a->bytes) : a->src;
  if (!dst || !src)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": mem_copy of %zu bytes: the %s %p "
                          "is not inside one allocation of this device", a->bytes,
                          !dst ? "destination" : "source", !dst ? a->dst : a->src);
  if (s) {
    work *w = calloc(1, sizeof *w);
    if (!w)
      return coil_sdk_out_of_memory();
    w->dst = dst, w->src = src, w->bytes = a->bytes;
    return queue(s, w);
  }
  coil_error *e = sync_all(fd);
  if (e)
    return e;
  memmove(dst, src, a->bytes);
  return NULL;
}

coil_error *
fake_mem_copy(coil_plugin *self, const coil_mem_copy_args *a)
{
  LOCKED(template_device(self), mem_copy_locked(self, a));
}

/* ---- runs ---- */

static void
work_free(work *w)
{
  if (!w)
    return;
  free(w->tensors);
  free(w->tensor_ptrs);
  free(w->layouts);
  free(w);
}

/* Bytes a tensor's layout reaches from its first element; 0 when it has no elements. */
static size_t
reach_bytes(const coil_plugin_tensor *t)
{
  size_t n = 1;
  for (int d = 0; d < t->rank; d++) {
    if (t->sizes[d] <= 0)
      return 0;
    n += (size_t)(t->sizes[d] - 1) * (size_t)(t->strides[d] > 0 ? t->strides[d] : 0);
  }
  return n * coil_dtype_size((coil_dtype)t->dtype);
}

/* Copies one tensor descriptor into w (index k), with data made real. */
static coil_error *
take_tensor(const fake_device *fd, work *w, size_t k, const coil_plugin_tensor *t,
            const char *what, size_t i)
{
  if (!COIL_STRUCT_HAS(t, coil_plugin_tensor, device_type) || t->rank < 0 ||
      t->rank > COIL_MAX_RANK || t->dtype < 0 || t->dtype >= COIL_DTYPE_COUNT ||
      (t->rank > 0 && (!t->sizes || !t->strides)))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": %s %zu is not a valid tensor", what, i);
  int32_t want = fd->fake ? COIL_DEVICE_EXT_DEV : COIL_DEVICE_CPU;
  if (t->device_type != want || t->device_index != 0)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": %s %zu is on device %d:%d; this "
                          "instance runs on %d:0 (%s)", what, i, (int)t->device_type,
                          (int)t->device_index, (int)want, fd->fake ? "the fake device: place "
                          "tensors with mem_alloc and mem_copy" : "host memory");
  coil_plugin_tensor *c = &w->tensors[k];
  *c = *t;
  c->struct_size = sizeof *c;
  memcpy(w->layouts[k][0], t->sizes, (size_t)t->rank * sizeof(int64_t));
  memcpy(w->layouts[k][1], t->strides, (size_t)t->rank * sizeof(int64_t));
  c->sizes = w->layouts[k][0];
  c->strides = w->layouts[k][1];
  c->device_type = COIL_DEVICE_CPU; /* what the interpreter reads is real memory */
  size_t bytes = reach_bytes(t);
  if (fd->fake && bytes && !(c->data = resolve(fd, t->data, bytes)))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": %s %zu (%zu bytes at %p) is not "
                          "inside one allocation of the fake device", what, i, bytes, t->data);
  w->tensor_ptrs[k] = c;
  return NULL;
}

static coil_error *
device_run_locked(fake_device *fd, coil_artifact *art, const coil_plugin_run_args *args,
                fake_run_fn *run_host)
{
  if (!COIL_STRUCT_HAS(args, coil_plugin_run_args, outputs) ||
      (args->ninputs && !args->inputs) || (args->noutputs && !args->outputs))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": run arguments are missing or too old");
  coil_stream *s = COIL_STRUCT_HAS(args, coil_plugin_run_args, stream) && args->has_stream
                       ? args->stream : NULL;
  if (s && !ours(fd, s))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": run on a stream this instance did "
                          "not create (stream_create)");
  size_t n = args->ninputs + args->noutputs;
  work *w = calloc(1, sizeof *w);
  if (w) {
    w->tensors = calloc(n + 1, sizeof *w->tensors);
    w->tensor_ptrs = calloc(n + 1, sizeof *w->tensor_ptrs);
    w->layouts = calloc(n + 1, sizeof *w->layouts);
  }
  if (!w || !w->tensors || !w->tensor_ptrs || !w->layouts) {
    work_free(w);
    return coil_sdk_out_of_memory();
  }
  coil_error *e = NULL;
  for (size_t i = 0; !e && i < args->ninputs; i++)
    e = take_tensor(fd, w, i, args->inputs[i], "input", i);
  for (size_t i = 0; !e && i < args->noutputs; i++)
    e = take_tensor(fd, w, args->ninputs + i, args->outputs[i], "output", i);
  if (e) {
    work_free(w);
    return e;
  }
  w->art = art;
  w->run_host = run_host;
  w->args = (coil_plugin_run_args){.struct_size = sizeof w->args, .ninputs = args->ninputs,
                                   .inputs = w->tensor_ptrs, .noutputs = args->noutputs,
                                   .outputs = w->tensor_ptrs + args->ninputs};
  if (s)
    return queue(s, w);
  e = sync_all(fd); /* a synchronous run comes after everything queued */
  if (!e)
    e = run_host(art, &w->args);
  work_free(w);
  return e;
}

coil_error *
fake_device_run(fake_device *fd, coil_artifact *art, const coil_plugin_run_args *args,
                fake_run_fn *run_host)
{
  if (!fd->fake && COIL_STRUCT_HAS(args, coil_plugin_run_args, outputs) &&
      !(COIL_STRUCT_HAS(args, coil_plugin_run_args, stream) && args->has_stream))
    return run_host(art, args); /* host memory, synchronous: no lock, runs in parallel */
  LOCKED(fd, device_run_locked(fd, art, args, run_host));
}

/* ---- streams and events ---- */

/* Does the work of s up to seq upto in order; after a failure, skips the rest. */
static void
drain(coil_stream *s, uint64_t upto)
{
  while (s->head && s->head->seq <= upto) {
    work *w = s->head;
    s->head = w->next;
    if (!s->head)
      s->tail = NULL;
    s->done = w->seq;
    if (s->err) {
      work_free(w);
      continue;
    }
    if (w->art) {
      coil_error *e = w->run_host(w->art, &w->args);
      if (e) { /* the same message, said to come from queued work */
        s->err = coil_sdk_error(coil_sdk_error_code(e), NAME ": a run queued on the stream "
                                "failed: %s", coil_sdk_error_message(e));
        coil_sdk_error_free(e);
      }
    } else {
      memmove(w->dst, w->src, w->bytes);
    }
    work_free(w);
  }
}

static coil_error *
stream_create_locked(coil_plugin *self, int32_t device, coil_stream **out)
{
  fake_device *fd = template_device(self);
  if (device != 0)
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": stream on device %d (there is "
                          "one: 0)", (int)device);
  coil_stream *s = calloc(1, sizeof *s);
  if (!s)
    return coil_sdk_out_of_memory();
  s->fd = fd;
  s->next = fd->streams;
  fd->streams = s;
  *out = s;
  return NULL;
}

coil_error *
fake_stream_create(coil_plugin *self, int32_t device, coil_stream **out)
{
  LOCKED(template_device(self), stream_create_locked(self, device, out));
}

static coil_error *
stream_sync_locked(coil_plugin *self, coil_stream *s)
{
  if (!ours(template_device(self), s))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": stream_sync of a stream this "
                          "instance did not create");
  drain(s, s->queued);
  coil_error *e = s->err;
  s->err = NULL;
  return e;
}

coil_error *
fake_stream_sync(coil_plugin *self, coil_stream *s)
{
  LOCKED(template_device(self), stream_sync_locked(self, s));
}

static void
stream_destroy(fake_device *fd, coil_stream *s)
{
  if (!s || !ours(fd, s))
    return;
  drain(s, s->queued);
  if (s->err)
    coil_sdk_error_free(s->err);
  for (coil_stream **p = &fd->streams; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  free(s);
}

void
fake_stream_destroy(coil_plugin *self, coil_stream *s)
{
  fake_device *fd = template_device(self);
  pthread_mutex_lock(&fd->lock);
  stream_destroy(fd, s);
  pthread_mutex_unlock(&fd->lock);
}

static coil_error *
event_record_locked(coil_plugin *self, coil_stream *s, coil_event **out)
{
  if (!ours(template_device(self), s))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": event_record on a stream this "
                          "instance did not create");
  coil_event *ev = calloc(1, sizeof *ev);
  if (!ev)
    return coil_sdk_out_of_memory();
  ev->stream = s;
  ev->seq = s->queued;
  *out = ev;
  return NULL;
}

coil_error *
fake_event_record(coil_plugin *self, coil_stream *s, coil_event **out)
{
  LOCKED(template_device(self), event_record_locked(self, s, out));
}

/* Later work on s waits for ev: here, by doing ev's work now (it is ahead in any order). */
static coil_error *
event_wait_locked(coil_plugin *self, coil_stream *s, coil_event *ev)
{
  fake_device *fd = template_device(self);
  if (!ev || !ours(fd, s) || !ours(fd, ev->stream))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": event_wait with a stream or event "
                          "of another instance, or one destroyed");
  drain(ev->stream, ev->seq);
  return NULL;
}

coil_error *
fake_event_wait(coil_plugin *self, coil_stream *s, coil_event *ev)
{
  LOCKED(template_device(self), event_wait_locked(self, s, ev));
}

static coil_error *
event_sync_locked(coil_plugin *self, coil_event *ev)
{
  if (!ev || !ours(template_device(self), ev->stream))
    return coil_sdk_error(COIL_ERR_INVALID_ARGUMENT, NAME ": event_sync of an event whose stream "
                          "is gone");
  drain(ev->stream, ev->seq);
  coil_error *e = ev->stream->err;
  ev->stream->err = NULL;
  return e;
}

coil_error *
fake_event_sync(coil_plugin *self, coil_event *ev)
{
  LOCKED(template_device(self), event_sync_locked(self, ev));
}

void
fake_event_destroy(coil_plugin *self, coil_event *ev)
{
  (void)self;
  free(ev);
}

/* ---- the extension ---- */

static size_t
live_bytes(coil_plugin *self)
{
  fake_device *fd = template_device(self);
  size_t n = 0;
  pthread_mutex_lock(&fd->lock);
  for (size_t i = 0; i < fd->nblocks; i++)
    n += fd->blocks[i].bytes;
  pthread_mutex_unlock(&fd->lock);
  return n;
}

static size_t
live_blocks(coil_plugin *self)
{
  fake_device *fd = template_device(self);
  pthread_mutex_lock(&fd->lock);
  size_t n = fd->nblocks;
  pthread_mutex_unlock(&fd->lock);
  return n;
}

const fake_device_v1 fake_device_extension = {sizeof(fake_device_v1), live_bytes, live_blocks};

#endif
