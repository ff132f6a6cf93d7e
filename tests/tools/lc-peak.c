/* lc-peak REPORT CMD [ARG...]: runs CMD and writes "SECONDS PEAK_KIB\n" to REPORT.
 *
 * For the benches: a child's peak RSS (wait4's ru_maxrss) includes what the process
 * that forked it had mapped, and Python's subprocess forks from a 20-30 MiB
 * interpreter. Forked from this small program instead, the figure is the tool's own. */
#define _DEFAULT_SOURCE 1
#include <stdio.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: lc-peak REPORT CMD [ARG...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const pid_t pid = fork();
    if (pid < 0) {
        perror("lc-peak: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("lc-peak: exec");
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("lc-peak: wait4");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    FILE *f = fopen(argv[1], "w");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    fprintf(f, "%.6f %ld\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9,
            ru.ru_maxrss);
    fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
