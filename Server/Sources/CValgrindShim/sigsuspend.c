// Preloaded into the server that `switchboard bench cost` runs under valgrind, and nowhere else.
//
// Swift's async main ends in libdispatch's dispatch_main(), whose main thread waits in
// sigsuspend() with a signal mask in read-only memory. Valgrind 3.19 (Debian 12's) writes into the
// mask it is given before passing it on, and dies with an internal SIGSEGV there, so no Swift
// program with an async main runs under it. This sigsuspend hands libc a copy of the mask on the
// stack; it changes nothing else.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>

#include "CValgrindShim.h"

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    int (*next)(const sigset_t *) = (int (*)(const sigset_t *))dlsym(RTLD_NEXT, "sigsuspend");
    return next(&copy);
}
