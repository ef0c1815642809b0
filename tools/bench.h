/* bench.h — the benchmarks behind `coil bench` (bench.c). */
#ifndef COIL_TOOLS_BENCH_H
#define COIL_TOOLS_BENCH_H

/* coil bench --core-only [--nodes N]: compile time per statement on generated graphs. */
int coil_bench_core(int argc, char **argv);
/* coil bench: the cpu plugin (found in plugin_dir) on the benchmark graphs. */
int coil_bench_cpu(int argc, char **argv, const char *plugin_dir);

/* coil bench --conv [--rounds N] [--threads T]: generated convolution against the cpu plugin's
 * library call on ResNet-style 3x3 layers. */
int coil_bench_conv(int argc, char **argv, const char *plugin_dir);

/* coil bench --backend cuda [--json FILE] [--only NAME]: the cuda plugin on the GPU graphs. */
int coil_bench_cuda(int argc, char **argv, const char *plugin_dir);

#endif
