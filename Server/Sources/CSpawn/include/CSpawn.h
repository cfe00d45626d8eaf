#ifndef SWITCHBOARD_CSPAWN_H
#define SWITCHBOARD_CSPAWN_H

#include <sys/types.h>

/// Starts `path` with `argv` and `envp` (NULL-terminated), in `directory` (NULL: this process's),
/// with `input`, `output` and `error` as its descriptors 0, 1 and 2 (-1: inherit this process's),
/// no other descriptor of this process, every signal at its default disposition and none blocked.
/// Returns 0 and sets `*pid`, or an errno value.
int switchboard_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                      const char *directory, int input, int output, int error);

/// A pipe whose two ends are closed in children (O_CLOEXEC): 0, or an errno value.
int switchboard_pipe(int fds[2]);

#endif
