/* The built-in CPU backend: compiled into librill rather than loaded as a
   plugin, so that the default configuration works with one library file. */
#ifndef RILL_CPU_BACKEND_H
#define RILL_CPU_BACKEND_H

#include "rill_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the CPU backend's table, implementing RILL_BACKEND_ABI_VERSION.
   host stays valid for the life of the process. Never fails. */
const rill_backend* rill_cpu_backend_get(const rill_host_services* host);

#ifdef __cplusplus
}
#endif

#endif
