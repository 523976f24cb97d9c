/* util/fsutil: an output file is written atomically and only over a
 * regular file or nothing. A link, a FIFO or a device at the target's
 * name is refused before the run (pf_check_writable_path) and again at
 * the rename (pf_write_file_atomic), left as it was, with no temp file
 * left behind; a directory option is a directory or could be made one. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/fsutil.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/pf-fsutil.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static int entries(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    cr_assert_not_null(d);
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

Test(fsutil, regular_or_missing_target_is_replaced, .init = setup,
     .fini = teardown)
{
    char path[128], err[512], *buf;

    snprintf(path, sizeof(path), "%s/r.json", dir);
    cr_assert_eq(pf_check_writable_path(path, err), PF_OK, "%s", err);
    cr_assert_eq(pf_write_file_atomic(path, "one", 3, err), PF_OK, "%s", err);
    cr_assert_eq(pf_check_writable_path(path, err), PF_OK, "%s", err);
    cr_assert_eq(pf_write_file_atomic(path, "two", 3, err), PF_OK, "%s", err);
    cr_assert_eq(pf_read_file(path, 16, &buf, NULL, err), PF_OK);
    cr_assert_str_eq(buf, "two");
    free(buf);
    cr_assert_eq(entries(), 1);
}

Test(fsutil, link_at_target_is_refused_before_and_at_the_rename,
     .init = setup, .fini = teardown)
{
    char path[128], victim[128], err[512], *buf;
    struct stat st;

    snprintf(victim, sizeof(victim), "%s/victim", dir);
    snprintf(path, sizeof(path), "%s/r.json", dir);
    cr_assert_eq(pf_write_file_atomic(victim, "precious", 8, err), PF_OK);
    cr_assert_eq(symlink(victim, path), 0);
    cr_assert_eq(pf_check_writable_path(path, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "is a symbolic link"), "%s", err);
    /* The entry became a link after the check: the rename refuses too. */
    cr_assert_neq(pf_write_file_atomic(path, "report", 6, err), PF_OK);
    cr_assert(strstr(err, path) && strstr(err, "symbolic link"), "%s", err);
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced");
    cr_assert_eq(pf_read_file(victim, 16, &buf, NULL, err), PF_OK);
    cr_assert_str_eq(buf, "precious");
    free(buf);
    cr_assert_eq(entries(), 2, "a temp file was left behind");
}

Test(fsutil, fifo_and_device_at_target_are_never_replaced, .init = setup,
     .fini = teardown)
{
    char path[128], err[512];
    struct stat st;

    snprintf(path, sizeof(path), "%s/fifo.prom", dir);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(pf_check_writable_path(path, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "is a FIFO"), "%s", err);
    cr_assert_neq(pf_write_file_atomic(path, "x", 1, err), PF_OK);
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISFIFO(st.st_mode));

    /* A character device made here with /dev/null's numbers (root only). */
    snprintf(path, sizeof(path), "%s/null", dir);
    if (mknod(path, S_IFCHR | 0600, makedev(1, 3)) == 0) {
        cr_assert_eq(pf_check_writable_path(path, err), PF_ERR_USAGE);
        cr_assert(strstr(err, "is a character device"), "%s", err);
        cr_assert_neq(pf_write_file_atomic(path, "x", 1, err), PF_OK);
        cr_assert_eq(lstat(path, &st), 0);
        cr_assert(S_ISCHR(st.st_mode), "the device node was replaced");
    }
    cr_assert_eq(entries(), access(path, F_OK) == 0 ? 2 : 1);
}

Test(fsutil, directory_option_is_a_directory_or_can_be_made,
     .init = setup, .fini = teardown)
{
    char path[128], err[512];

    cr_assert_eq(pf_check_dir_path(dir, err), PF_OK, "%s", err);
    snprintf(path, sizeof(path), "%s/new", dir);
    cr_assert_eq(pf_check_dir_path(path, err), PF_OK, "%s", err);
    snprintf(path, sizeof(path), "%s/no/new", dir);
    cr_assert_eq(pf_check_dir_path(path, err), PF_ERR_USAGE);
    snprintf(path, sizeof(path), "%s/file", dir);
    cr_assert_eq(pf_write_file_atomic(path, "x", 1, err), PF_OK);
    cr_assert_eq(pf_check_dir_path(path, err), PF_ERR_USAGE);
    cr_assert(strstr(err, "is a regular file, not a directory"), "%s", err);
    snprintf(path, sizeof(path), "%s/dangling", dir);
    cr_assert_eq(symlink("/nonexistent/x", path), 0);
    cr_assert_eq(pf_check_dir_path(path, err), PF_ERR_USAGE);
}
