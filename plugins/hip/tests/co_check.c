/* co_check.c — checks an AMD GPU code object as the hip plugin writes it, without LLVM's tools:
 * an ELF64 for EM_AMDGPU whose e_flags name the arch (EF_AMDGPU_MACH), whose symbol table defines
 * each kernel as a function with its kernel descriptor NAME.kd, and whose NT_AMDGPU_METADATA note
 * (MessagePack) names each kernel, the target (amdgcn-amd-amdhsa--ARCH) and the wavefront size
 * the plugin planned for.
 *
 * Usage: co_check FILE ARCH WAVE KERNEL...   (exit 0: valid; 1: not, with the reason on stderr) */
#include <elf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
#define NT_AMDGPU_METADATA 32

/* EF_AMDGPU_MACH values of LLVM's ELF.h for the archs the test compiles */
static const struct {
  const char *arch;
  unsigned mach;
} machs[] = {{"gfx900", 0x2c}, {"gfx906", 0x2f}, {"gfx908", 0x30}, {"gfx90a", 0x3f},
             {"gfx1030", 0x36}, {"gfx1031", 0x37}, {"gfx1032", 0x38}};

static int
fail(const char *file, const char *why, const char *what)
{
  fprintf(stderr, "co_check: %s: %s%s%s\n", file, why, what ? " " : "", what ? what : "");
  return 1;
}

static bool
contains(const unsigned char *hay, size_t n, const void *needle, size_t m)
{
  for (size_t i = 0; m <= n && i <= n - m; i++)
    if (memcmp(hay + i, needle, m) == 0)
      return true;
  return false;
}

/* a MessagePack string (fixstr or str8) */
static size_t
mp_str(const char *s, unsigned char *out)
{
  size_t n = strlen(s), h = 0;
  if (n < 32)
    out[h++] = (unsigned char)(0xa0 | n);
  else
    out[h++] = 0xd9, out[h++] = (unsigned char)n;
  memcpy(out + h, s, n);
  return h + n;
}

int
main(int argc, char **argv)
{
  if (argc < 4)
    return fprintf(stderr, "usage: co_check FILE ARCH WAVE KERNEL...\n"), 2;
  const char *file = argv[1], *arch = argv[2];
  int wave = atoi(argv[3]);
  FILE *f = fopen(file, "rb");
  if (!f)
    return fail(file, "cannot open", NULL);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(size > 0 ? (size_t)size : 1);
  if (!b || size < (long)sizeof(Elf64_Ehdr) || fread(b, 1, (size_t)size, f) != (size_t)size)
    return fail(file, "cannot read", NULL);
  fclose(f);
  size_t n = (size_t)size;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
    return fail(file, "not an ELF64 file", NULL);
  if (eh->e_machine != EM_AMDGPU)
    return fail(file, "not for AMD GPUs (e_machine)", NULL);
  unsigned want = 0;
  for (size_t i = 0; i < sizeof machs / sizeof *machs; i++)
    if (strcmp(machs[i].arch, arch) == 0)
      want = machs[i].mach;
  if (!want)
    return fail(file, "this checker does not know the arch", arch);
  if ((eh->e_flags & 0xff) != want)
    return fail(file, "compiled for another arch than", arch);
  if (eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff + (size_t)eh->e_shnum * sizeof(Elf64_Shdr) > n)
    return fail(file, "no readable section headers", NULL);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
  const Elf64_Sym *syms = NULL;
  size_t nsyms = 0;
  const char *strtab = NULL;
  size_t strsize = 0;
  const unsigned char *meta = NULL;
  size_t metasize = 0;
  for (int i = 0; i < eh->e_shnum; i++) {
    if (sh[i].sh_offset + sh[i].sh_size > n)
      return fail(file, "a section lies past the end", NULL);
    if (sh[i].sh_type == SHT_SYMTAB && sh[i].sh_link < eh->e_shnum) {
      syms = (const Elf64_Sym *)(b + sh[i].sh_offset);
      nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
      strtab = (const char *)(b + sh[sh[i].sh_link].sh_offset);
      strsize = sh[sh[i].sh_link].sh_size;
    }
    if (sh[i].sh_type == SHT_NOTE) /* notes: namesz, descsz, type, name (4-aligned), desc */
      for (size_t o = sh[i].sh_offset; o + 12 <= sh[i].sh_offset + sh[i].sh_size;) {
        const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(b + o);
        size_t name = o + 12, desc = name + ((nh->n_namesz + 3) & ~3u);
        if (desc + nh->n_descsz > n)
          break;
        if (nh->n_type == NT_AMDGPU_METADATA && nh->n_namesz == 7 && memcmp(b + name, "AMDGPU", 7) == 0)
          meta = b + desc, metasize = nh->n_descsz;
        o = desc + ((nh->n_descsz + 3) & ~3u);
      }
  }
  if (!syms || !strtab)
    return fail(file, "no symbol table", NULL);
  if (!meta)
    return fail(file, "no AMDGPU metadata note", NULL);
  unsigned char key[320];
  char text[300];
  snprintf(text, sizeof text, "amdgcn-amd-amdhsa--%s", arch);
  size_t kn = mp_str(text, key);
  if (!contains(meta, metasize, key, kn))
    return fail(file, "the metadata's target is not", text);
  kn = mp_str(".wavefront_size", key);
  key[kn++] = (unsigned char)wave; /* a positive fixint */
  if (!contains(meta, metasize, key, kn))
    return fail(file, "the metadata's wavefront size is not", argv[3]);
  for (int k = 4; k < argc; k++) {
    bool fn = false, kd = false;
    snprintf(text, sizeof text, "%s.kd", argv[k]);
    for (size_t s = 0; s < nsyms; s++) {
      if (syms[s].st_name >= strsize || syms[s].st_shndx == SHN_UNDEF)
        continue;
      const char *nm = strtab + syms[s].st_name;
      fn = fn || (strcmp(nm, argv[k]) == 0 && ELF64_ST_TYPE(syms[s].st_info) == STT_FUNC);
      kd = kd || strcmp(nm, text) == 0;
    }
    if (!fn || !kd)
      return fail(file, fn ? "no kernel descriptor for" : "no kernel function", argv[k]);
    kn = mp_str(argv[k], key);
    if (!contains(meta, metasize, key, kn))
      return fail(file, "the metadata does not name", argv[k]);
  }
  free(b);
  return 0;
}
