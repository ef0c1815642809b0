/* arena.h — region allocation for IR, and what running out of memory does. Everything one
 * graph or one compile allocates lives in one arena and is released at once by coil_arena_free.
 * Allocation never returns NULL: out of memory inside a recovery scope (coil_oom_scope: the
 * compile and the graph parser open one) unwinds to it, freeing what the scope allocated, and the
 * call fails with "out of memory"; anywhere else the process aborts with a message. */
#ifndef COIL_ARENA_H
#define COIL_ARENA_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct coil_arena coil_arena;

coil_arena *coil_arena_new(void);
void coil_arena_free(coil_arena *a);
void *coil_arena_alloc(coil_arena *a, size_t n);                    /* zeroed, 16-byte aligned */
char *coil_arena_strndup(coil_arena *a, const char *s, size_t n);    /* NUL-terminated copy */
char *coil_arena_strdup(coil_arena *a, const char *s);
void *coil_xmalloc(size_t n);            /* malloc that never returns NULL (see above) */
void *coil_xcalloc(size_t n, size_t size);
void *coil_xrealloc(void *p, size_t n);
void coil_xfree(void *p);                /* frees any malloc'd block; inside a scope, use it
                                            (not free) for what the coil_x* functions gave */

/* A recovery scope. Between COIL_OOM_TRY and coil_oom_end, every block the coil_x* functions and
 * the arenas allocate on this thread is recorded until coil_xfree frees it; out of memory frees
 * every block still recorded and returns to COIL_OOM_TRY a second time, now false. So a scope's
 * work must keep what it allocates reachable only from objects made inside it (its result is
 * discarded whole), and must not be nested in another scope on the same thread.
 *
 *   coil_oom_scope s;
 *   if (!COIL_OOM_TRY(&s))
 *     return out_of_memory_error();       // everything allocated since the try is freed
 *   ... work ...
 *   coil_oom_end(&s);                     // keeps what was allocated
 */
typedef struct coil_oom_scope {
  jmp_buf jb;
  void **set;                /* open addressing: live blocks; NULL empty, &tombstone deleted */
  size_t cap, n, used;
  size_t failed_bytes;       /* the request that failed, after an unwind */
} coil_oom_scope;
void coil_oom_begin(coil_oom_scope *s);
void coil_oom_end(coil_oom_scope *s);
#define COIL_OOM_TRY(s) (coil_oom_begin(s), setjmp((s)->jb) == 0)

/* Fault injection for tests (SQLite-style): the nth allocation from now on this thread (a
 * coil_x* call or an arena allocation; n >= 1) fails as if memory ran out, and with persistent
 * every one after it too; n = 0 turns it off. coil_fault_alloc_count: allocations counted since
 * the last coil_fault_alloc call. */
void coil_fault_alloc(long n, bool persistent);
long coil_fault_alloc_count(void);

/* An array of n zeroed T in the arena. */
#define COIL_ARENA_ARRAY(a, T, n) ((T *)coil_arena_alloc((a), sizeof(T) * (size_t)(n)))

#endif
