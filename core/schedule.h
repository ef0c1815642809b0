/* schedule.h — (named so, not sched.h, so <pthread.h> finds the system <sched.h>) scheduling the loop IR into kernels and writing the Wrapper IR (core-internal). */
#ifndef COIL_SCHED_H
#define COIL_SCHED_H

#include "lower.h"

/* A fused group: the nodes of one kernel (or one extern call), over one iteration space. */
/* Buffers one kernel may read or write; fusion stops there (a kernel's parameters: each buffer
 * once as an input, once as an output at most). */
#define COIL_KERNEL_MAX_BUFFERS 64

typedef struct sgroup {
  int nmembers;
  int *members;              /* node indices, ascending (a topological order) */
  bool is_extern;
  int rank;                  /* the space: sizes, and which dims are reduced */
  const coil_sym *sizes[COIL_MAX_RANK];
  bool red[COIL_MAX_RANK];
  bool has_reduction;
  bool dead;                 /* merged into another group */
  int order;                 /* position in the final schedule */
} sgroup;

/* A small set of ints (buffer or node indices), malloc'd. */
typedef struct sched_ints {
  int n, cap;
  int *v;
} sched_ints;

typedef struct schedule {
  lowering *L;
  sched_ints *reads;         /* per node: buffers it reads (a view counts as its base) */
  sched_ints *writes;        /* per node: buffers it writes */
  sched_ints *readers;       /* per buffer: live nodes that read it */
  int ngroups;
  sgroup *groups;
  int *order;                /* group indices in execution order */
  int norder;
  int fusions;               /* how many merges happened */
} schedule;

/* sched.c: dead-code elimination, fusion (can_fuse + score_fusion to a fixpoint), ordering.
 * requires: a lowering from coil_lower; maintains: node bodies; produces: groups in order. */
int coil_sched_build(schedule *S, lowering *L, bool fuse, coil_diag *d);
/* How node n's dims are expressed in group g's loop variables (loopvars, one per space dim):
 * repl[i] for n's dim i. The space's own dims map to themselves, a pointwise node over the kept
 * dims maps onto them (size-1 kept dims read 0), and any node with as many elements maps by
 * unravelling the flat offset (a reshape). False if n cannot iterate g's space. */
bool coil_sched_map(const schedule *S, const sgroup *g, const lnode *n, const coil_sym *const *loopvars,
                    const coil_sym **repl);
/* Prints the loop IR of every live node (before fusion) or every group (after). */
void coil_sched_dump(const schedule *S, bool groups, coil_strbuf *out);

void coil_sched_free(schedule *S);
bool coil_sched_can_fuse(schedule *S, int a, int b);

/* emit.c: fills program p (whose sym context the lowering used) with the Wrapper IR for a
 * schedule, with the memory plan (free after last use, reuse of dead buffers of the same dtype
 * and size). */
int coil_emit_program(schedule *S, coil_wir_program *p, coil_diag *d);

#endif
