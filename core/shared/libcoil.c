/* libcoil.c — libcoil.so is the core archive linked whole (core/CMakeLists.txt): every function
 * of coil/embed.h and coil/coil.h is in it. The library target needs a source of its own; this
 * is it. */
