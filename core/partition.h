/* partition.h — partial offload (core-internal): a program split across a list of backends.
 *
 * Each kernel_call and extern_call goes to the first backend of the list that claims it (every
 * op and dtype it needs, as supports() answers); consecutive calls on one backend make a part.
 * A part is a standalone, verified Wrapper IR program: its inputs are the storages it reads that
 * were made elsewhere (graph inputs, or outputs of earlier parts), its outputs the storages it
 * makes that later parts or the graph's outputs need. Between parts the host transfers those
 * storages: out of one plugin's memory and into the next's (through the host, with the devices
 * of ABI 1.4 where a plugin has them). The plan prints as text (coil compile --dump shows it).
 *
 * Not split (refused by name): an in-place update of an input (copy_back), a storage written by
 * two parts, a storage that crosses parts without being dense row-major, a part that needs a size
 * symbol none of its inputs carries. Reuse of a dead buffer's storage becomes an alloc inside a
 * part. */
#ifndef COIL_PARTITION_H
#define COIL_PARTITION_H

#include <stdbool.h>
#include <stddef.h>

#include "coil/coil.h"
#include "coil/wir.h"

/* Whether backend `which` of the list claims line l of p; when not, a short reason in why. */
typedef bool (*coil_claim_fn)(void *user, int which, const coil_wir_program *p, const coil_line *l,
                              char *why, size_t n);

typedef struct coil_part {
  int backend;                 /* index into the list */
  coil_wir_program *program;   /* owned; verified */
  int ninputs;                 /* == program->ninputs */
  char **input_values;         /* per input: the value it reads (owned): "input LABEL" for a
                                  graph input, else the original buffer's name ("buf3") */
  int noutputs;
  char **output_values;        /* per output of its output line: the value it makes (owned) */
} coil_part;

typedef struct coil_partition {
  int nparts;
  coil_part *parts;
  int noutputs;                /* the graph's outputs ... */
  char **output_values;        /* ... as values (owned), as above */
  char *plan;                  /* the plan as text: parts, transfers, each part's program */
} coil_partition;

/* Splits p (verified) across nbackends backends named names[] with claim(). Returns 0, or -1 with
 * the reason in d (a line no backend claims names the line and each backend's reason). */
int coil_partition_plan(const coil_wir_program *p, int nbackends, const char *const *names,
                        coil_claim_fn claim, void *user, coil_partition *out, coil_diag *d);
void coil_partition_free(coil_partition *pt);

#endif
