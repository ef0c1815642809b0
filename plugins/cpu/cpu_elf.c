/* cpu_elf.c — loads an LLVM-built kernels.o into the process without LLVM (x86-64 Linux).
 *
 * The object is what LLVM's code generator writes for the kernels of one program: a relocatable
 * ELF with .text, read-only constants and relocations against them, calls to libm and libc
 * (memset) as undefined symbols. Loading it: check the headers against the file's size, lay the
 * allocated sections out in one anonymous mapping (code and constants first, then writable data
 * and a table of addresses), resolve undefined symbols in the process (and libm), apply the
 * x86-64 relocations a small-code-model PIC object holds, then make the code part read-only and
 * executable. Calls to functions outside the mapping go through a stub (jmp *slot(%rip)) and
 * GOT-relative loads through a slot, so the mapping may lie anywhere. .eh_frame is not loaded
 * (nothing unwinds through kernels). Anything else — another machine, an unknown relocation, a
 * symbol the process lacks — is refused with a reason, and the plugin falls back to LLVM's JIT. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_elf.h"

#if defined(__x86_64__) && defined(__linux__)
#include <elf.h>

struct cpu_elf {
  unsigned char *map;
  size_t map_size;
  const Elf64_Sym *syms;     /* into `copy` */
  const char *strs;
  size_t nsyms, strs_size;
  uint64_t *addr;            /* per symbol: its address, 0 when undefined here */
  void *copy;                /* the object's bytes (the symbol table stays there) */
};

#define STUB_SIZE 16 /* jmp *0(%rip) and the 8-byte address */

static bool
fail(char *why, size_t size, const char *fmt, const char *arg)
{
  snprintf(why, size, fmt, arg);
  return false;
}

static void *
resolve(const char *name)
{
  void *p = dlsym(RTLD_DEFAULT, name);
  if (!p) { /* libm may be loaded only as a dependency of a plugin opened RTLD_LOCAL */
    static void *libm;
    if (!libm)
      libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    p = libm ? dlsym(libm, name) : NULL;
  }
  return p;
}

cpu_elf *
cpu_elf_load(const void *obj, size_t size, char *why, size_t wsize)
{
  cpu_elf *e = calloc(1, sizeof *e);
  unsigned char *b = malloc(size ? size : 1);
  uint64_t *base = NULL;
  bool ok = e && b;
  if (!ok) {
    snprintf(why, wsize, "out of memory");
    goto done;
  }
  memcpy(b, obj, size);
  e->copy = b;
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)b;
  if (size < sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) != 0 || h->e_ident[EI_CLASS] != ELFCLASS64 ||
      h->e_ident[EI_DATA] != ELFDATA2LSB || h->e_type != ET_REL || h->e_machine != EM_X86_64 ||
      h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shnum == 0 || h->e_shnum > 4096 || h->e_shoff > size ||
      (size - h->e_shoff) / sizeof(Elf64_Shdr) < h->e_shnum) {
    ok = fail(why, wsize, "%s", "not an x86-64 relocatable ELF object");
    goto done;
  }
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + h->e_shoff);
  int n = h->e_shnum, symtab = -1;
  for (int i = 0; i < n && ok; i++) {
    if (sh[i].sh_type != SHT_NOBITS && (sh[i].sh_offset > size || sh[i].sh_size > size - sh[i].sh_offset))
      ok = fail(why, wsize, "%s", "a section lies outside the file");
    if (sh[i].sh_addralign > 4096 || (sh[i].sh_addralign & (sh[i].sh_addralign - 1)))
      ok = fail(why, wsize, "%s", "a section's alignment is not a power of two up to 4096");
    if (sh[i].sh_type == SHT_SYMTAB)
      symtab = symtab < 0 ? i : -2;
  }
  if (!ok)
    goto done;
  if (symtab < 0 || sh[symtab].sh_entsize != sizeof(Elf64_Sym) || sh[symtab].sh_link >= (unsigned)n ||
      sh[sh[symtab].sh_link].sh_type != SHT_STRTAB) {
    ok = fail(why, wsize, "%s", "no single symbol table with its strings");
    goto done;
  }
  e->syms = (const Elf64_Sym *)(b + sh[symtab].sh_offset);
  e->nsyms = sh[symtab].sh_size / sizeof(Elf64_Sym);
  e->strs = (const char *)(b + sh[sh[symtab].sh_link].sh_offset);
  e->strs_size = sh[sh[symtab].sh_link].sh_size;
  if (e->strs_size == 0 || e->strs[e->strs_size - 1] != 0) {
    ok = fail(why, wsize, "%s", "the symbol names are not terminated");
    goto done;
  }
  /* layout: code and read-only sections, then the stubs; a page boundary; writable sections,
   * then the address slots */
  base = calloc((size_t)n, sizeof *base);
  e->addr = calloc(e->nsyms + 1, sizeof *e->addr);
  if (!base || !e->addr) {
    ok = fail(why, wsize, "%s", "out of memory");
    goto done;
  }
  uint64_t at[2] = {0, 0}; /* bytes of the two parts */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      uint64_t f = sh[i].sh_flags;
      bool load = (f & SHF_ALLOC) && sh[i].sh_type != SHT_X86_64_UNWIND && sh[i].sh_size > 0;
      if (!load || (pass == 1) != ((f & SHF_WRITE) != 0))
        continue;
      uint64_t al = sh[i].sh_addralign ? sh[i].sh_addralign : 1;
      at[pass] = (at[pass] + al - 1) & ~(al - 1);
      base[i] = at[pass] + 1; /* + 1: 0 means not loaded; fixed below */
      at[pass] += sh[i].sh_size;
      if (at[pass] > (1u << 30)) {
        ok = fail(why, wsize, "%s", "sections larger than 1 GiB");
        goto done;
      }
    }
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t stubs = (at[0] + 15) & ~(uint64_t)15;
  uint64_t code = (stubs + STUB_SIZE * e->nsyms + page - 1) & ~(page - 1);
  uint64_t slots = code + ((at[1] + 7) & ~(uint64_t)7);
  e->map_size = (slots + 8 * e->nsyms + page - 1) & ~(page - 1);
  if (e->map_size == 0)
    e->map_size = page;
  void *m = mmap(NULL, e->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    ok = fail(why, wsize, "%s", "cannot map memory for the kernels");
    goto done;
  }
  e->map = m;
  for (int i = 0; i < n; i++)
    if (base[i]) {
      base[i] = (uint64_t)(uintptr_t)e->map + base[i] - 1 + ((sh[i].sh_flags & SHF_WRITE) ? code : 0);
      if (sh[i].sh_type != SHT_NOBITS)
        memcpy((void *)(uintptr_t)base[i], b + sh[i].sh_offset, sh[i].sh_size);
    }
  /* symbols: in a loaded section, absolute, or found in the process */
  for (size_t s = 1; s < e->nsyms && ok; s++) {
    const Elf64_Sym *y = &e->syms[s];
    if (y->st_name >= e->strs_size)
      ok = fail(why, wsize, "%s", "a symbol's name lies outside its table");
    else if (y->st_shndx == SHN_UNDEF) {
      const char *name = e->strs + y->st_name;
      void *p = *name ? resolve(name) : NULL;
      if (*name && !p)
        ok = fail(why, wsize, "undefined symbol %s", name);
      e->addr[s] = (uint64_t)(uintptr_t)p;
    } else if (y->st_shndx == SHN_ABS) {
      e->addr[s] = y->st_value;
    } else if (y->st_shndx < n && base[y->st_shndx]) {
      e->addr[s] = base[y->st_shndx] + y->st_value;
    } /* else: in a section not loaded (.eh_frame, a file symbol): fine unless relocated against */
  }
  for (size_t s = 1; s < e->nsyms && ok; s++) { /* a stub and a slot for every symbol */
    unsigned char *st = e->map + stubs + STUB_SIZE * s;
    static const unsigned char jmp[6] = {0xff, 0x25, 0, 0, 0, 0}; /* jmp *0(%rip) */
    memcpy(st, jmp, 6);
    memcpy(st + 6, &e->addr[s], 8);
    memcpy(e->map + slots + 8 * s, &e->addr[s], 8);
  }
  /* relocations of the loaded sections */
  for (int r = 0; r < n && ok; r++) {
    if (sh[r].sh_type == SHT_REL) {
      ok = fail(why, wsize, "%s", "REL relocations (x86-64 objects use RELA)");
      break;
    }
    if (sh[r].sh_type != SHT_RELA || sh[r].sh_info >= (unsigned)n || !base[sh[r].sh_info])
      continue; /* relocations of a section not loaded */
    if (sh[r].sh_link != (unsigned)symtab || sh[r].sh_entsize != sizeof(Elf64_Rela)) {
      ok = fail(why, wsize, "%s", "relocations against another symbol table");
      break;
    }
    const Elf64_Shdr *t = &sh[sh[r].sh_info];
    const Elf64_Rela *rel = (const Elf64_Rela *)(b + sh[r].sh_offset);
    for (size_t k = 0; k < sh[r].sh_size / sizeof *rel && ok; k++) {
      uint32_t type = ELF64_R_TYPE(rel[k].r_info);
      size_t s = ELF64_R_SYM(rel[k].r_info);
      size_t width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
      if (type == R_X86_64_NONE)
        continue;
      if (s == 0 || s >= e->nsyms || rel[k].r_offset > t->sh_size || t->sh_size - rel[k].r_offset < width) {
        ok = fail(why, wsize, "%s", "a relocation outside its section or symbol table");
        break;
      }
      const Elf64_Sym *y = &e->syms[s];
      bool undefined = y->st_shndx == SHN_UNDEF;
      if (!e->addr[s] && !(undefined && ELF64_ST_BIND(y->st_info) == STB_WEAK)) {
        ok = fail(why, wsize, "a relocation against %s, which is not loaded", e->strs + y->st_name);
        break;
      }
      uint64_t P = base[sh[r].sh_info] + rel[k].r_offset, S = e->addr[s];
      int64_t A = rel[k].r_addend, v;
      unsigned char *p = (unsigned char *)(uintptr_t)P;
      switch (type) {
      case R_X86_64_64: {
        uint64_t x = S + (uint64_t)A;
        memcpy(p, &x, 8);
        continue;
      }
      case R_X86_64_PC64: {
        uint64_t x = S + (uint64_t)A - P;
        memcpy(p, &x, 8);
        continue;
      }
      case R_X86_64_PC32: case R_X86_64_PLT32: /* a call outside the mapping goes through the stub */
        v = (int64_t)((undefined ? (uint64_t)(uintptr_t)(e->map + stubs + STUB_SIZE * s) : S) + (uint64_t)A - P);
        break;
      case R_X86_64_GOTPCREL: case R_X86_64_GOTPCRELX: case R_X86_64_REX_GOTPCRELX:
        v = (int64_t)((uint64_t)(uintptr_t)(e->map + slots + 8 * s) + (uint64_t)A - P);
        break;
      default: {
        char num[32];
        snprintf(num, sizeof num, "%u", type);
        ok = fail(why, wsize, "relocation type %s is not handled", num);
        continue;
      }
      }
      if (v < INT32_MIN || v > INT32_MAX) {
        ok = fail(why, wsize, "a 32-bit relocation against %s out of range", e->strs + y->st_name);
        break;
      }
      int32_t x = (int32_t)v;
      memcpy(p, &x, 4);
    }
  }
  if (ok && mprotect(e->map, code, PROT_READ | PROT_EXEC) != 0)
    ok = fail(why, wsize, "%s", "cannot make the kernels executable");
done:
  free(base);
  if (!ok) {
    cpu_elf_free(e);
    return NULL;
  }
  return e;
}

void *
cpu_elf_symbol(const cpu_elf *e, const char *name)
{
  for (size_t s = 1; s < e->nsyms; s++) {
    const Elf64_Sym *y = &e->syms[s];
    if (y->st_shndx != SHN_UNDEF && ELF64_ST_BIND(y->st_info) == STB_GLOBAL && ELF64_ST_TYPE(y->st_info) == STT_FUNC &&
        strcmp(e->strs + y->st_name, name) == 0)
      return (void *)(uintptr_t)e->addr[s];
  }
  return NULL;
}

void
cpu_elf_free(cpu_elf *e)
{
  if (!e)
    return;
  if (e->map)
    munmap(e->map, e->map_size);
  free(e->addr);
  free(e->copy);
  free(e);
}

#else /* not x86-64 Linux: the JIT loads every object */

cpu_elf *
cpu_elf_load(const void *obj, size_t size, char *why, size_t wsize)
{
  (void)obj;
  (void)size;
  snprintf(why, wsize, "coil loads objects itself on x86-64 Linux only");
  return NULL;
}

void *
cpu_elf_symbol(const cpu_elf *e, const char *name)
{
  (void)e;
  (void)name;
  return NULL;
}

void
cpu_elf_free(cpu_elf *e)
{
  (void)e;
}

#endif
