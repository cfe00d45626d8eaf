// See sigsuspend.c: a library preloaded into a server run under valgrind by `switchboard bench cost`.
#include <signal.h>

int sigsuspend(const sigset_t *mask);
