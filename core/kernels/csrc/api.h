/* What the library exports: the functions Python binds through ctypes (core/kernels/library.py). */
#ifndef LL_API_H
#define LL_API_H

/* The library is built with -fvisibility=hidden: only what is marked LL_API is exported, and every exported name
 * starts with ll_ (tests/kernels/test_kernel_tables.py checks both on the built library). */
#define LL_API __attribute__((visibility("default")))

#endif
