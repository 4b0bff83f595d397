/*
 * The pause container of the tests' single-node cluster: the process that holds
 * a pod's namespaces while its containers come and go. It sleeps until SIGINT or
 * SIGTERM (then exits 0) and reaps any orphan that the kernel hands it as the
 * pod's PID 1. hack/build-images.sh compiles it statically into the image
 * `isolane.dev/pause`; nothing else is in that image.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int signal) {
    (void)signal;
    _exit(0);
}

static void on_child(int signal) {
    (void)signal;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
        puts("isolane pause 1");
        return 0;
    }
    struct sigaction stop = {.sa_handler = on_stop};
    struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP};
    if (sigaction(SIGINT, &stop, NULL) != 0 || sigaction(SIGTERM, &stop, NULL) != 0 ||
        sigaction(SIGCHLD, &child, NULL) != 0) {
        perror("pause: sigaction");
        return 1;
    }
    for (;;) {
        pause();
    }
}
