/* cpu_elf.h — an LLVM-built kernels.o loaded without LLVM (cpu_elf.c; x86-64 Linux). */
#ifndef COIL_CPU_ELF_H
#define COIL_CPU_ELF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cpu_elf cpu_elf;

/* Maps the object (size bytes at obj, copied), relocated and ready to call; NULL with *why when
 * it cannot (the caller then uses LLVM's JIT). */
cpu_elf *cpu_elf_load(const void *obj, size_t size, char *why, size_t wsize);
/* The address of global function `name`, or NULL. */
void *cpu_elf_symbol(const cpu_elf *e, const char *name);
void cpu_elf_free(cpu_elf *e);

#endif
