/* memprof-ci: where the built-in tracker's profile goes.
 *
 * 1. `out` (with %p expanded) names either an existing file that is
 *    not a regular file once symlinks are followed (/dev/stdout, a
 *    pipe, a terminal), which is written in place since a rename would
 *    replace it; or anything else, and then the profile is written to
 *    a new temporary file beside it and renamed over it, so the name
 *    only ever holds a complete profile.
 * 2. The temporary file is created with O_CREAT|O_EXCL|O_NOFOLLOW and
 *    mode 0666 less the umask: a name that exists already, such as a
 *    symlink planted to make us overwrite its target, is never opened,
 *    and the next name is tried (`<out>.tmp.<pid>`, then
 *    `<out>.tmp.<pid>.1` ... up to 100 names, then EEXIST). The rename
 *    replaces a symlink at `out` itself, never its target. On failure
 *    the temporary file is removed.
 * 3. The in-place case opens `out` without O_CREAT or O_TRUNC and
 *    checks the type on the open descriptor, so a symlink swapped in
 *    after the check, pointing at a regular file, is closed unwritten
 *    and the rename path taken instead: no regular file is ever
 *    written through a name we did not create.
 * 4. The document is streamed through a 256 KiB window
 *    (memprof_jsonbuf.c), never built whole in memory; the caller's
 *    callback renders it (memprof_tracker.c, memprof_profile.c).
 * 5. A file written as it goes (the trace, memprof_ctf.c) takes the
 *    same two paths in two steps: caml_memprof_out_create opens it at
 *    the start, caml_memprof_out_commit closes it and renames it into
 *    place at the end (or removes it after a failure).
 * 6. One descriptor is kept in reserve from the tracker's start (on
 *    /dev/null, close-on-exec): a program that runs out of file
 *    descriptors, on purpose or not, still gets its profile, since an
 *    open that fails with EMFILE gives the reserve back and is tried
 *    once more. The program has one descriptor fewer while it runs.
 * 7. Thread-safety: the reserve is taken back by one atomic exchange;
 *    nothing else is global, and each call is made once.
 *
 * Licensed under the GNU LGPL 2.1 with the OCaml linking exception,
 * like the OCaml runtime it is part of (see runtime-patch/LICENSE). */

#define CAML_INTERNALS

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "caml/memprof_jsonbuf.h"
#include "caml/memprof_outfile.h"

#define OUT_WINDOW ((size_t)256 << 10)
#define TMP_TRIES 100

static _Atomic int reserve_fd = -1;

void caml_memprof_out_reserve(void)
{
  int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int none = -1;
  if (fd >= 0 && !atomic_compare_exchange_strong(&reserve_fd, &none, fd))
    close(fd);
}

/* open(2), and once more with the reserve given back when the process
 * has no descriptor left (design 6). */
static int open_out(const char *path, int flags, mode_t mode)
{
  int fd = open(path, flags, mode);
  if (fd < 0 && errno == EMFILE) {
    int spare = atomic_exchange(&reserve_fd, -1);
    if (spare >= 0) {
      close(spare);
      fd = open(path, flags, mode);
    }
  }
  return fd;
}

char *caml_memprof_expand_numbered(const char *tmpl, unsigned long n)
{
  struct caml_memprof_buf b = CAML_MEMPROF_BUF_INIT;
  caml_memprof_buf_lit(&b, "");
  for (const char *p = tmpl; *p; p++) {
    if (p[0] == '%' && p[1] == 'p') {
      caml_memprof_buf_printf(&b, "%ld", (long)getpid());
      p++;
    } else if (p[0] == '%' && p[1] == 'n') {
      caml_memprof_buf_printf(&b, "%lu", n);
      p++;
    } else if (p[0] == '%' && (p[1] == '%' || p[1] == ',')) {
      caml_memprof_buf_add(&b, p + 1, 1);
      p++;
    } else {
      caml_memprof_buf_add(&b, p, 1);
    }
  }
  if (b.err) { free(b.s); return NULL; }
  return b.s;
}

char *caml_memprof_expand_out(const char *tmpl)
{
  return caml_memprof_expand_numbered(tmpl, 0);
}

/* `*fd` is `path` opened for writing when it exists and is not a
 * regular file (design 1), else -1. The type is checked again on the
 * open descriptor (design 3). Returns 0 or an errno. */
static int open_in_place(const char *path, int *fd)
{
  struct stat st;
  *fd = -1;
  if (stat(path, &st) != 0 || S_ISREG(st.st_mode)) return 0;
  int d = open_out(path, O_WRONLY | O_NOCTTY | O_CLOEXEC, 0);
  if (d < 0) return errno;
  if (fstat(d, &st) != 0 || S_ISREG(st.st_mode)) {
    close(d);
    return 0;
  }
  *fd = d;
  return 0;
}

/* A new temporary file beside `path`, its name in `tmp` (design 2):
 * `<path>.tmp.<pid>`, or `<path>.tmp.<pid>.<n>` when that name is
 * taken. O_EXCL and O_NOFOLLOW: an existing name, whatever it is (a
 * symlink, a hard link, a file), is never opened. Returns the
 * descriptor, or -1 with errno set. */
static int create_tmp(const char *path, char *tmp, size_t len)
{
  for (unsigned i = 0; i < TMP_TRIES; i++) {
    if (i == 0) snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid());
    else snprintf(tmp, len, "%s.tmp.%ld.%u", path, (long)getpid(), i);
    int fd = open_out(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

int caml_memprof_write_out(const char *path, caml_memprof_render_fn render,
                           void *data)
{
  size_t len = strlen(path) + 64;
  char *tmp = malloc(len);
  char *window = malloc(OUT_WINDOW);
  int err = 0, fd = -1;
  if (tmp == NULL || window == NULL) { err = ENOMEM; goto out; }
  err = open_in_place(path, &fd);
  if (err != 0) goto out;
  bool in_place = fd >= 0;
  if (!in_place && (fd = create_tmp(path, tmp, len)) < 0) {
    err = errno;
    goto out;
  }
  FILE *f = fdopen(fd, "w");
  if (f == NULL) {
    err = errno;
    close(fd);
  } else {
    struct caml_memprof_buf b = { window, 0, OUT_WINDOW, 0, f };
    if (!render(&b, data) && b.err == 0) b.err = ENOMEM;
    caml_memprof_buf_flush(&b);
    err = b.err;
    if (fclose(f) != 0 && err == 0) err = errno ? errno : EIO;
  }
  if (in_place) goto out;
  if (err == 0 && rename(tmp, path) != 0) err = errno;
  if (err != 0) unlink(tmp);
 out:
  free(window);
  free(tmp);
  return err;
}

int caml_memprof_out_create(const char *path, char **tmp, int *fd)
{
  size_t len = strlen(path) + 64;
  *tmp = NULL;
  int err = open_in_place(path, fd);
  if (err != 0 || *fd >= 0) return err;
  if ((*tmp = malloc(len)) == NULL) return ENOMEM;
  if ((*fd = create_tmp(path, *tmp, len)) < 0) {
    err = errno;
    free(*tmp);
    *tmp = NULL;
  }
  return err;
}

int caml_memprof_out_commit(const char *path, char *tmp, int fd, int err)
{
  if (close(fd) != 0 && err == 0) err = errno ? errno : EIO;
  if (tmp != NULL) {
    if (err == 0 && rename(tmp, path) != 0) err = errno;
    if (err != 0) unlink(tmp);
    free(tmp);
  }
  return err;
}
