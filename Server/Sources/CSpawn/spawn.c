// Child processes without Foundation's `Process`, whose Linux `run()` can crash while it looks for
// the highest open descriptor (swift-corelibs-foundation #5472): posix_spawn, with glibc's
// closefrom and chdir file actions, which need _GNU_SOURCE and so a C file (on Apple platforms,
// POSIX_SPAWN_CLOEXEC_DEFAULT does what closefrom does).
#define _GNU_SOURCE
#include "CSpawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

int switchboard_spawn(pid_t *pid, const char *path, char *const argv[], char *const envp[],
                      const char *directory, int input, int output, int error) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) return rc;
    rc = posix_spawnattr_init(&attributes);
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return rc;
    }
    const int sources[3] = {input, output, error};
    for (int target = 0; target < 3 && rc == 0; target++) {
        if (sources[target] >= 0) rc = posix_spawn_file_actions_adddup2(&actions, sources[target], target);
    }
    if (rc == 0 && directory != NULL) rc = posix_spawn_file_actions_addchdir_np(&actions, directory);
#ifdef __APPLE__
    short flags = POSIX_SPAWN_CLOEXEC_DEFAULT;
#else
    short flags = 0;
    if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif

    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attributes, &none);
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attributes, &all);
    if (rc == 0) rc = posix_spawnattr_setflags(&attributes, flags | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (rc == 0) rc = posix_spawn(pid, path, &actions, &attributes, argv, envp);

    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return rc;
}

int switchboard_pipe(int fds[2]) {
#ifdef __APPLE__
    // No pipe2: children get only what a file action names (POSIX_SPAWN_CLOEXEC_DEFAULT).
    return pipe(fds) == 0 ? 0 : errno;
#else
    return pipe2(fds, O_CLOEXEC) == 0 ? 0 : errno;
#endif
}
