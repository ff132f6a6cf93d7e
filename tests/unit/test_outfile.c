/* Unit tests for atomic output files and folders, input opening and the input
 * registry, the map, and the signal cleanup (in forked children, so that the handlers
 * and the deaths stay out of the test process). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libconvert/cleanup.h"
#include "libconvert/input.h"
#include "libconvert/map.h"
#include "libconvert/outdir.h"
#include "libconvert/outfile.h"

/* ---- helpers ---- */

static char *scratch(void) {
    static char dir[64];
    strcpy(dir, "/tmp/lc-outfile-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static void join(char *buf, const char *dir, const char *name) {
    int n = snprintf(buf, 512, "%s/%s", dir, name);
    if (n < 0 || n >= 512)
        abort();
}

/* Names in DIR (not . and ..), sorted, joined by spaces: "" when empty. */
static const char *listing(const char *dir) {
    static char out[4096];
    char *names[64];
    int n = 0;
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    for (struct dirent *e; (e = readdir(d)) && n < 64;)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            names[n++] = strdup(e->d_name);
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (strcmp(names[j], names[i]) < 0) {
                char *t = names[i];
                names[i] = names[j];
                names[j] = t;
            }
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i)
            strcat(out, " ");
        strcat(out, names[i]);
        free(names[i]);
    }
    return out;
}

/* The one temporary (documented pattern) in DIR other than `skip`, into buf; false
 * when none. */
static bool find_temp_but(const char *dir, const char *out_name, const char *skip, char *buf) {
    char prefix[300];
    snprintf(prefix, sizeof prefix, ".%s.lc-", out_name);
    bool found = false;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name), k = strlen(prefix);
        char path[512];
        join(path, dir, e->d_name);
        if (n == k + 10 + 4 && strncmp(e->d_name, prefix, k) == 0 &&
            strcmp(e->d_name + n - 4, ".tmp") == 0 && (!skip || strcmp(path, skip) != 0)) {
            cr_assert(!found, "two temporaries for %s", out_name);
            strcpy(buf, path);
            found = true;
        }
    }
    if (d)
        closedir(d);
    return found;
}

static bool find_temp(const char *dir, const char *out_name, char *buf) {
    return find_temp_but(dir, out_name, NULL, buf);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *read_file(const char *path) {
    static char buf[256];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void rm_rf(const char *dir) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static lc_code write_out(const char *path, const char *text, lc_error *err) {
    lc_outfile *f;
    lc_code rc = lc_outfile_open(path, &f, err);
    if (rc == LC_OK && (rc = lc_outfile_write(f, text, strlen(text), err)) != LC_OK)
        lc_outfile_abort(f);
    else if (rc == LC_OK)
        rc = lc_outfile_commit(f, err);
    return rc;
}

/* ---- outfile ---- */

Test(outfile, commit_renames_and_abort_cleans) {
    const char *dir = scratch();
    char path[512], tmp[512];
    join(path, dir, "out.bin");
    lc_outfile *f;
    lc_error err = {0};
    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK);
    static uint8_t big[3 << 20];
    memset(big, 0xab, sizeof big);
    cr_assert_eq(lc_outfile_write(f, "hdr", 3, &err), LC_OK);
    cr_assert_eq(lc_outfile_write(f, big, sizeof big, &err), LC_OK);
    cr_assert_eq(lc_outfile_pad(f, 5, &err), LC_OK);
    cr_assert_eq(lc_outfile_tell(f), 3 + sizeof big + 5);
    cr_assert_eq(access(path, F_OK), -1, "final file must not exist before commit");
    cr_assert(find_temp(dir, "out.bin", tmp));
    cr_assert_eq(lc_outfile_commit(f, &err), LC_OK);
    cr_assert_str_eq(listing(dir), "out.bin");
    lc_map *m;
    cr_assert_eq(lc_map_open(path, &m, &err), LC_OK);
    cr_assert_eq(m->size, 3 + sizeof big + 5);
    cr_assert_eq(memcmp(m->data, "hdr", 3), 0);
    cr_assert_eq(m->data[3 + sizeof big - 1], 0xab);
    cr_assert_eq(m->data[m->size - 1], 0);
    lc_map_close(m);
    lc_input_forget_all();   /* it was read above: now it may be an output again */

    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK);
    cr_assert_eq(lc_outfile_write(f, "x", 1, &err), LC_OK);
    lc_outfile_abort(f);
    cr_assert_str_eq(listing(dir), "out.bin", "old file stays after abort, no temporary");
    cr_assert_eq(lc_map_open(path, &m, &err), LC_OK);
    cr_assert_eq(m->size, 3 + sizeof big + 5);
    lc_map_close(m);
    rm_rf(dir);
}

Test(outfile, unwritable_dir_is_io_error) {
    lc_outfile *f = (lc_outfile *)1;
    lc_error err = {0};
    cr_assert_eq(lc_outfile_open("/nonexistent-dir/x.bin", &f, &err), LC_E_IO);
    cr_assert_null(f);
    cr_assert_str_eq(err.path, "/nonexistent-dir/x.bin");
}

/* ".NAME.lc-XXXXXXXXXX.tmp" beside OUT, mode 0666 less the umask; NAME cut to 200. */
Test(outfile, temporary_name_and_mode) {
    const char *dir = scratch();
    char path[512], tmp[512], longname[260];
    (void)tmp;
    join(path, dir, "model.gguf");
    mode_t old = umask(027);
    lc_outfile *f;
    lc_error err = {0};
    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK, "%s", err.msg);
    cr_assert(find_temp(dir, "model.gguf", tmp), "%s", listing(dir));
    struct stat st;
    cr_assert_eq(lstat(tmp, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_eq(st.st_mode & 0777, 0640);
    cr_assert_eq(lc_outfile_commit(f, &err), LC_OK);
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0640);
    umask(old);

    memset(longname, 'n', 250);
    longname[250] = '\0';
    join(path, dir, longname);
    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK, "%s", err.msg);
    memset(longname + 200, 0, 50);
    cr_assert(find_temp(dir, longname, tmp), "%s", listing(dir));
    lc_outfile_abort(f);
    rm_rf(dir);
}

/* Links and FIFOs planted at the old fixed name or at the very names a run will try
 * are never opened: the run takes the next name, the victims stay as they were. */
Test(outfile, planted_links_are_never_written) {
    const char *dir = scratch();
    char path[512], victim[512], planted[512], first[512], second[512];
    join(path, dir, "o.bin");
    join(victim, dir, "victim");
    write_file(victim, "precious");
    join(planted, dir, "o.bin.tmp");
    cr_assert_eq(symlink(victim, planted), 0);

    /* The names seed 42 gives, in order. */
    lc_error err = {0};
    lc_outfile *f;
    for (int i = 0; i < 2; i++) {
        lc_outfile_test_names(42);
        if (i == 1)     /* the first name is taken: the second one is used */
            cr_assert_eq(mkdir(first, 0700), 0);
        cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK, "%s", err.msg);
        cr_assert(find_temp_but(dir, "o.bin", i ? first : NULL, i ? second : first));
        lc_outfile_abort(f);
        if (i == 1)
            cr_assert_eq(rmdir(first), 0);
    }
    cr_assert_str_neq(first, second);

    const char *kinds[] = { "symlink", "hardlink", "fifo", "dangling" };
    for (int k = 0; k < 4; k++) {
        lc_outfile_test_names(42);
        if (k == 0)
            cr_assert_eq(symlink(victim, first), 0);
        else if (k == 1)
            cr_assert_eq(link(victim, first), 0);
        else if (k == 2)
            cr_assert_eq(mkfifo(first, 0600), 0);
        else
            cr_assert_eq(symlink("/tmp/lc-outfile-nowhere", first), 0);
        cr_assert_eq(write_out(path, "new", &err), LC_OK, "%s: %s", kinds[k], err.msg);
        cr_assert_str_eq(read_file(path), "new");
        cr_assert_str_eq(read_file(victim), "precious", "%s written through", kinds[k]);
        struct stat st;
        cr_assert_eq(lstat(first, &st), 0, "%s removed", kinds[k]);
        cr_assert(k == 1 ? S_ISREG(st.st_mode) : !S_ISREG(st.st_mode), "%s", kinds[k]);
        cr_assert_eq(lstat(planted, &st), 0);
        cr_assert(S_ISLNK(st.st_mode), "the old name must stay a symlink");
        cr_assert_eq(access("/tmp/lc-outfile-nowhere", F_OK), -1);
        unlink(first);
        unlink(path);
    }
    lc_outfile_test_names(0);
    rm_rf(dir);
}

/* An output that is an input of this run, by any name, is refused before anything
 * is created; so are folders and special files at OUT. */
Test(outfile, output_that_is_an_input_is_refused) {
    const char *dir = scratch();
    char in[512], hard[512], sym[512], sub[512], fifo[512];
    join(in, dir, "in.bin");
    join(hard, dir, "hard.bin");
    join(sym, dir, "sym.bin");
    join(sub, dir, "sub");
    join(fifo, dir, "fifo");
    write_file(in, "input bytes");
    cr_assert_eq(link(in, hard), 0);
    cr_assert_eq(symlink(in, sym), 0);
    cr_assert_eq(mkdir(sub, 0700), 0);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    lc_error err = {0};
    lc_map *m;
    cr_assert_eq(lc_map_open(in, &m, &err), LC_OK);
    const char *outs[] = { in, hard, sym };
    for (int i = 0; i < 3; i++) {
        lc_outfile *f = (lc_outfile *)1;
        memset(&err, 0, sizeof err);
        cr_assert_eq(lc_outfile_open(outs[i], &f, &err), LC_E_ARG, "%s", outs[i]);
        cr_assert_null(f);
        cr_assert_str_eq(err.path, outs[i]);
        cr_assert(i == 0 || strstr(err.msg, in), "%s", err.msg);
    }
    cr_assert_str_eq(listing(dir), "fifo hard.bin in.bin sub sym.bin");
    cr_assert_str_eq(read_file(in), "input bytes");
    lc_map_close(m);
    /* Still an input after its map is closed: the registry is for the whole run. */
    memset(&err, 0, sizeof err);
    cr_assert_eq(write_out(in, "x", &err), LC_E_ARG);
    lc_input_forget_all();
    memset(&err, 0, sizeof err);
    cr_assert_eq(write_out(hard, "y", &err), LC_OK, "%s", err.msg);

    const char *specials[] = { sub, fifo };
    for (int i = 0; i < 2; i++) {
        memset(&err, 0, sizeof err);
        cr_assert_eq(write_out(specials[i], "x", &err), LC_E_ARG, "%s", specials[i]);
        cr_assert(strstr(err.msg, i ? "FIFO" : "folder"), "%s", err.msg);
    }
    cr_assert_str_eq(listing(dir), "fifo hard.bin in.bin sub sym.bin");
    rm_rf(dir);
}

/* An input opened after the output was opened is caught at commit. */
Test(outfile, input_opened_meanwhile_is_caught_at_commit) {
    const char *dir = scratch();
    char path[512];
    join(path, dir, "o.bin");
    write_file(path, "old");
    lc_outfile *f;
    lc_error err = {0};
    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK);
    cr_assert_eq(lc_outfile_write(f, "new", 3, &err), LC_OK);
    int fd;
    uint64_t size;
    cr_assert_eq(lc_input_open(path, &fd, &size, &err), LC_OK);
    close(fd);
    cr_assert_eq(lc_outfile_commit(f, &err), LC_E_ARG);
    cr_assert_str_eq(read_file(path), "old");
    cr_assert_str_eq(listing(dir), "o.bin");
    rm_rf(dir);
}

/* ---- inputs ---- */

Test(input, special_files_are_refused_without_blocking, .timeout = 20) {
    const char *dir = scratch();
    char fifo[512], sock[512], file[512];
    join(fifo, dir, "f");
    join(sock, dir, "s");
    join(file, dir, "r");
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    cr_assert(strlen(sock) < sizeof sa.sun_path);
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    write_file(file, "abc");
    struct { const char *path, *says; lc_code code; } cases[] = {
        { fifo, "is a FIFO", LC_E_ARG },          { sock, "is a socket", LC_E_ARG },
        { dir, "is a folder", LC_E_ARG },          { "/dev/null", "character device", LC_E_ARG },
        { "/nonexistent-lc", "cannot open", LC_E_NOTFOUND },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int fd = 7;
        uint64_t size;
        lc_error err = {0};
        cr_assert_eq(lc_input_open(cases[i].path, &fd, &size, &err), cases[i].code, "%s: %s",
                     cases[i].path, err.msg);
        cr_assert_eq(fd, -1);
        cr_assert(strstr(err.msg, cases[i].says), "%s: %s", cases[i].path, err.msg);
        cr_assert_str_eq(err.path, cases[i].path);
        lc_map *m = (lc_map *)1;
        memset(&err, 0, sizeof err);
        cr_assert_eq(lc_map_open(cases[i].path, &m, &err), cases[i].code);
        cr_assert_null(m);
    }
    int fd;
    uint64_t size;
    cr_assert_eq(lc_input_open(file, &fd, &size, NULL), LC_OK);
    cr_assert_eq(size, 3);
    cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "reads block as usual");
    cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    struct stat st;
    cr_assert_eq(stat(file, &st), 0);
    cr_assert_str_eq(lc_input_find((uint64_t)st.st_dev, (uint64_t)st.st_ino), file);
    close(fd);
    close(s);
    rm_rf(dir);
}

Test(input, registry_holds_many_files) {
    const char *dir = scratch();
    char path[512];
    struct stat st[300];
    for (int i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "f%d", i);
        join(path, dir, name);
        write_file(path, "x");
        int fd;
        uint64_t size;
        cr_assert_eq(lc_input_open(path, &fd, &size, NULL), LC_OK);
        cr_assert_eq(fstat(fd, &st[i]), 0);
        close(fd);
    }
    for (int i = 0; i < 300; i++) {
        const char *p = lc_input_find((uint64_t)st[i].st_dev, (uint64_t)st[i].st_ino);
        char name[32];
        snprintf(name, sizeof name, "/f%d", i);
        cr_assert(p && strstr(p, name), "%d: %s", i, p ? p : "(null)");
    }
    cr_assert_null(lc_input_find(0, 12345));
    lc_input_forget_all();
    cr_assert_null(lc_input_find((uint64_t)st[0].st_dev, (uint64_t)st[0].st_ino));
    rm_rf(dir);
}

Test(map, missing_and_empty) {
    lc_map *m;
    lc_error err = {0};
    cr_assert_eq(lc_map_open("/nonexistent-file", &m, &err), LC_E_NOTFOUND);
    cr_assert_null(m);
    char path[] = "/tmp/lc-empty-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(lc_map_open(path, &m, NULL), LC_OK);
    cr_assert_eq(m->size, 0);
    cr_assert_null(m->data);
    lc_map_close(m);
    unlink(path);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_map_open("/tmp", &m, &err), LC_E_ARG);
}

/* ---- signals: each in a forked child that installs the handlers ---- */

/* Runs body() in a child with the handlers installed and its stderr in errbuf;
 * returns the wait status. */
static int in_child(void (*body)(const char *dir), const char *dir, char *errbuf,
                    size_t cap) {
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        for (int s = 1; s < NSIG; s++)
            signal(s, SIG_DFL);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        lc_cleanup_install("unit");
        body(dir);
        _exit(99);   /* body must not return */
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fds[0], errbuf + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    errbuf[n] = '\0';
    close(fds[0]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return status;
}

static int g_sig;

/* 40 outputs (more than one slot chunk), two temporary folders with files and an
 * output inside one, then the signal. */
static void many_then_signal(const char *dir) {
    lc_error err = {0};
    char path[512];
    for (int i = 0; i < 40; i++) {
        char name[32];
        snprintf(name, sizeof name, "o%d.bin", i);
        join(path, dir, name);
        lc_outfile *f;
        if (lc_outfile_open(path, &f, &err) != LC_OK || lc_outfile_write(f, "abc", 3, &err))
            _exit(98);
    }
    for (int i = 0; i < 2; i++) {
        lc_outdir *d;
        join(path, dir, i ? "set1" : "set0");
        if (lc_outdir_open(path, &d, &err) != LC_OK)
            _exit(97);
        lc_outfile *f;
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof name, "shard%d", k);
            if (lc_outdir_file(d, name, path, sizeof path, &err) != LC_OK)
                _exit(96);
            if (k < 2 ? write_out(path, "s", &err) : lc_outfile_open(path, &f, &err))
                _exit(95);
        }
    }
    kill(getpid(), g_sig);
    for (;;)
        pause();
}

Test(cleanup, every_terminating_signal_removes_every_temporary) {
    const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2,
                         SIGVTALRM, SIGPROF, SIGPOLL, SIGPWR, SIGRTMIN, SIGRTMAX };
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        const char *dir = scratch();
        char err[256];
        g_sig = sigs[i];
        int st = in_child(many_then_signal, dir, err, sizeof err);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 128 + sigs[i],
                  "signal %d: status %#x, %s", sigs[i], st, err);
        cr_assert_str_eq(listing(dir), "", "signal %d left files", sigs[i]);
        rm_rf(dir);
    }
}

/* A signal the caller ignores (nohup) stays ignored. */
static void ignored_hup(const char *dir) {
    (void)dir;
    kill(getpid(), SIGHUP);
    _exit(0);
}

Test(cleanup, ignored_signal_stays_ignored) {
    const char *dir = scratch();
    char err[64];
    void (*old)(int) = signal(SIGHUP, SIG_IGN);
    pid_t pid = fork();
    if (pid == 0) {
        lc_cleanup_install("unit");
        ignored_hup(dir);
    }
    signal(SIGHUP, old);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
    (void)err;
    rm_rf(dir);
}

/* The file-size limit: SIGXFSZ is ignored, the write fails with EFBIG, the error
 * names the output, and the temporary is gone. */
static void over_the_limit(const char *dir) {
    static uint8_t buf[1 << 20];
    char path[512];
    join(path, dir, "big.bin");
    struct rlimit rl = { 64 << 10, 64 << 10 };
    setrlimit(RLIMIT_FSIZE, &rl);
    lc_outfile *f;
    lc_error err = {0};
    if (lc_outfile_open(path, &f, &err) != LC_OK)
        _exit(10);
    lc_code rc = lc_outfile_write(f, buf, sizeof buf, &err);
    if (rc == LC_OK)
        rc = lc_outfile_commit(f, &err);
    else
        lc_outfile_abort(f);
    if (rc != LC_E_IO || strcmp(err.path, path) != 0 || !strstr(err.msg, "File too large"))
        _exit(11);
    /* A pipe with no reader: EPIPE, not death. */
    int p[2];
    if (pipe(p) != 0)
        _exit(12);
    close(p[0]);
    if (write(p[1], "x", 1) != -1 || errno != EPIPE)
        _exit(13);
    _exit(0);
}

Test(cleanup, file_size_limit_and_broken_pipe_are_errors) {
    const char *dir = scratch();
    char err[256];
    int st = in_child(over_the_limit, dir, err, sizeof err);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x %s", st, err);
    cr_assert_str_eq(listing(dir), "");
    rm_rf(dir);
}

/* A mapped input truncated while it is read: one line naming the file and the
 * offset of the first page past the new end, exit 1, no temporary. */
static void read_truncated(const char *dir) {
    char in[512], out[512];
    join(in, dir, "in.bin");
    join(out, dir, "o.bin");
    static uint8_t page[3 * 4096];
    memset(page, 7, sizeof page);
    FILE *f = fopen(in, "w");
    if (!f || fwrite(page, 1, sizeof page, f) != sizeof page || fclose(f))
        _exit(20);
    lc_map *m;
    lc_outfile *o;
    lc_error err = {0};
    if (lc_map_open(in, &m, &err) != LC_OK || lc_outfile_open(out, &o, &err) != LC_OK)
        _exit(21);
    if (truncate(in, 4096) != 0)
        _exit(22);
    volatile uint8_t x = m->data[2 * 4096];
    (void)x;
    _exit(23);
}

Test(cleanup, truncated_input_map_is_reported) {
    const char *dir = scratch();
    char err[1024], want[600];
    int st = in_child(read_truncated, dir, err, sizeof err);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %#x %s", st, err);
    snprintf(want, sizeof want,
             "unit: %s/in.bin: changed on disk while being read (at offset 0x2000)\n", dir);
    cr_assert_str_eq(err, want);
    cr_assert_str_eq(listing(dir), "in.bin");
    rm_rf(dir);
}

/* A crash outside any input map: temporaries removed, then the signal goes on to the
 * handler that was there before (here the default: killed by SIGSEGV). */
static void crash(const char *dir) {
    char out[512];
    join(out, dir, "o.bin");
    lc_outfile *o;
    lc_error err = {0};
    if (lc_outfile_open(out, &o, &err) != LC_OK)
        _exit(30);
    kill(getpid(), SIGSEGV);
    _exit(31);
}

Test(cleanup, crash_removes_temporaries_and_keeps_the_signal) {
    const char *dir = scratch();
    char err[4096];
    int st = in_child(crash, dir, err, sizeof err);
    /* Under a sanitizer its own handler reports and exits instead. */
    cr_assert(WIFSIGNALED(st) ? WTERMSIG(st) == SIGSEGV : WEXITSTATUS(st) != 0 &&
              WEXITSTATUS(st) != 31, "status %#x", st);
    cr_assert_str_eq(listing(dir), "");
    rm_rf(dir);
}

/* ---- outdir ---- */

static lc_outdir *new_set(const char *out, const char *const *names, const char *text) {
    lc_outdir *d;
    lc_error err = {0};
    cr_assert_eq(lc_outdir_open(out, &d, &err), LC_OK, "%s", err.msg);
    for (int i = 0; names[i]; i++) {
        char path[600];
        cr_assert_eq(lc_outdir_file(d, names[i], path, sizeof path, &err), LC_OK);
        cr_assert_eq(write_out(path, text, &err), LC_OK, "%s", err.msg);
    }
    return d;
}

Test(outdir, fresh_set_appears_at_once) {
    const char *dir = scratch();
    char out[512];
    join(out, dir, "model");
    mode_t old = umask(022);
    const char *names[] = { "a.safetensors", "b.safetensors", "index.json", NULL };
    lc_outdir *d = new_set(out, names, "v1");
    cr_assert_eq(access(out, F_OK), -1, "nothing at OUT before commit");
    struct stat st;
    cr_assert_eq(stat(lc_outdir_tmp_path(d), &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0700, "private while it is built");
    cr_assert_str_eq(listing(lc_outdir_tmp_path(d)), "a.safetensors b.safetensors index.json");
    lc_error err = {0};
    cr_assert_eq(lc_outdir_commit(d, &err), LC_OK, "%s", err.msg);
    umask(old);
    cr_assert_str_eq(listing(dir), "model");
    cr_assert_str_eq(listing(out), "a.safetensors b.safetensors index.json");
    cr_assert_eq(stat(out, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0755);
    char p[600];
    join(p, out, "b.safetensors");
    cr_assert_str_eq(read_file(p), "v1");
    rm_rf(dir);
}

Test(outdir, abort_removes_everything) {
    const char *dir = scratch();
    char out[512], path[600];
    join(out, dir, "model");
    const char *names[] = { "a", "b", NULL };
    lc_outdir *d = new_set(out, names, "v1");
    lc_outfile *f;
    lc_error err = {0};
    cr_assert_eq(lc_outdir_file(d, "c", path, sizeof path, &err), LC_OK);
    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK);
    lc_outfile_abort(f);
    lc_outdir_abort(d);
    cr_assert_str_eq(listing(dir), "");
    lc_outdir_abort(NULL);
    rm_rf(dir);
}

Test(outdir, file_names_must_be_plain) {
    const char *dir = scratch();
    char out[512], path[600];
    join(out, dir, "model");
    lc_outdir *d;
    lc_error err = {0};
    cr_assert_eq(lc_outdir_open(out, &d, &err), LC_OK);
    const char *bad[] = { "", ".", "..", "a/b", "/etc/passwd" };
    for (int i = 0; i < 5; i++)
        cr_assert_eq(lc_outdir_file(d, bad[i], path, sizeof path, &err), LC_E_ARG, "%s", bad[i]);
    lc_outdir_abort(d);
    rm_rf(dir);
}

/* An existing OUT: an empty folder or a previous set with the same names is replaced
 * at once; a folder holding anything the new set would not replace is refused and
 * left as it was. */
Test(outdir, existing_folder_rules) {
    const char *dir = scratch();
    char out[512], p[600];
    join(out, dir, "model");
    lc_error err = {0};
    const char *names[] = { "a", "b", NULL };

    cr_assert_eq(mkdir(out, 0700), 0);                              /* empty: replaced */
    cr_assert_eq(lc_outdir_commit(new_set(out, names, "v1"), &err), LC_OK, "%s", err.msg);
    cr_assert_str_eq(listing(out), "a b");

    cr_assert_eq(lc_outdir_commit(new_set(out, names, "v2"), &err), LC_OK, "%s", err.msg);
    cr_assert_str_eq(listing(dir), "model", "the old set is gone");
    cr_assert_str_eq(listing(out), "a b");
    join(p, out, "a");
    cr_assert_str_eq(read_file(p), "v2");

    join(p, out, "README");                     /* a file the new set does not have */
    write_file(p, "mine");
    const char *fewer[] = { "a", NULL };
    cr_assert_eq(lc_outdir_commit(new_set(out, names, "v3"), &err), LC_E_ARG);
    cr_assert(strstr(err.msg, "README"), "%s", err.msg);
    cr_assert_str_eq(err.path, out);
    cr_assert_str_eq(listing(dir), "model");
    cr_assert_str_eq(listing(out), "README a b");
    join(p, out, "a");
    cr_assert_str_eq(read_file(p), "v2");
    join(p, out, "README");
    unlink(p);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_outdir_commit(new_set(out, fewer, "v4"), &err), LC_E_ARG, "b is lost");
    cr_assert_str_eq(listing(out), "a b");

    /* Refused before any work: a subfolder, a symlink, an input, OUT not a folder. */
    join(p, out, "sub");
    cr_assert_eq(mkdir(p, 0700), 0);
    lc_outdir *d = (lc_outdir *)1;
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_outdir_open(out, &d, &err), LC_E_ARG);
    cr_assert_null(d);
    cr_assert(strstr(err.msg, "sub"), "%s", err.msg);
    rmdir(p);
    join(p, out, "link");
    cr_assert_eq(symlink("a", p), 0);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_outdir_open(out, &d, &err), LC_E_ARG);
    unlink(p);
    lc_map *m;
    join(p, out, "a");
    cr_assert_eq(lc_map_open(p, &m, &err), LC_OK);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_outdir_open(out, &d, &err), LC_E_ARG);
    cr_assert(strstr(err.msg, "input"), "%s", err.msg);
    lc_map_close(m);
    memset(&err, 0, sizeof err);
    cr_assert_eq(lc_outdir_open(p, &d, &err), LC_E_ARG, "a file is not a folder");
    cr_assert_str_eq(listing(dir), "model");
    cr_assert_str_eq(listing(out), "a b");
    rm_rf(dir);
}

/* ---- sets of files ---- */

static lc_outfile *open_with(const char *path, const char *text) {
    lc_outfile *f;
    lc_error err = {0};
    cr_assert_eq(lc_outfile_open(path, &f, &err), LC_OK, "%s", err.msg);
    cr_assert_eq(lc_outfile_write(f, text, strlen(text), &err), LC_OK);
    return f;
}

Test(outfile, a_set_appears_whole) {
    const char *dir = scratch();
    char a[512], b[512], c[512];
    join(a, dir, "m-00001-of-00003.gguf");
    join(b, dir, "m-00002-of-00003.gguf");
    join(c, dir, "m-00003-of-00003.gguf");
    write_file(b, "old");
    lc_outfile *fs[3] = { open_with(a, "one"), open_with(b, "two"), open_with(c, "three") };
    cr_assert_eq(access(a, F_OK), -1, "nothing appears before the commit");
    lc_error err = {0};
    cr_assert_eq(lc_outfile_commit_set(fs, 3, &err), LC_OK, "%s", err.msg);
    cr_assert_null(fs[0]);
    cr_assert_str_eq(listing(dir), "m-00001-of-00003.gguf m-00002-of-00003.gguf "
                     "m-00003-of-00003.gguf");
    cr_assert_str_eq(read_file(b), "two");
    cr_assert_str_eq(read_file(c), "three");
    rm_rf(dir);
}

Test(outfile, a_set_that_fails_leaves_nothing) {
    const char *dir = scratch();
    char a[512], b[512], c[512];
    join(a, dir, "m-00001-of-00003.gguf");
    join(b, dir, "m-00002-of-00003.gguf");
    join(c, dir, "m-00003-of-00003.gguf");
    write_file(a, "old");
    lc_outfile *fs[3] = { open_with(a, "one"), open_with(b, "two"), open_with(c, "three") };
    cr_assert_eq(mkdir(c, 0700), 0);       /* the last target became a folder meanwhile */
    lc_error err = {0};
    cr_assert_eq(lc_outfile_commit_set(fs, 3, &err), LC_E_ARG);
    cr_assert_str_eq(err.path, c);
    cr_assert_null(fs[2]);
    cr_assert_str_eq(listing(dir), "m-00001-of-00003.gguf m-00003-of-00003.gguf",
                     "no temporary, no new part; the folder and the old first part stay");
    cr_assert_str_eq(read_file(a), "old");
    rm_rf(dir);
}
