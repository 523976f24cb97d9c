/* The XID class table and the kernel-log parser (probe/xid.h). */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/xid.h"

static bool parse(const char *s, struct pf_xid_hit *h)
{
    return pf_xid_parse_line(s, strlen(s), h);
}

Test(xid, parses_the_driver_line_forms)
{
    struct pf_xid_hit h;

    cr_assert(parse("[  12.3] NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has "
                    "fallen off the bus.", &h));
    cr_assert_eq(h.xid, 79);
    cr_assert_eq(h.bus, 0x18);
    cr_assert_str_eq(h.busid, "0000:18:00");
    cr_assert(parse("6,99,123,-;NVRM: Xid (PCI:0000:c1:00): 119, pid=1, "
                    "Timeout after 45s", &h));
    cr_assert_eq(h.xid, 119);
    cr_assert_eq(h.bus, 0xc1);
    cr_assert(parse("NVRM: Xid (PCI:00000001:3b:00.0): 48, An uncorrectable",
                    &h));
    cr_assert_eq(h.domain, 1);
    cr_assert_eq(h.xid, 48);
    cr_assert(parse("NVRM: Xid (PCI:0000:3b:00): 13", &h), "number at the end");
}

Test(xid, rejects_malformed_lines)
{
    struct pf_xid_hit h;
    static const char *const bad[] = {
        "NVRM: GPU at PCI:0000:18:00: GPU-123",
        "NVRM: Xid (PCI:0000:18): 79, short tuple",
        "NVRM: Xid (PCI:zz:18:00): 79, not hex",
        "NVRM: Xid (PCI:0000:18:00): , no number",
        "NVRM: Xid (PCI:0000:18:00): 12345678, too long",
        "NVRM: Xid (PCI:0000:18:00): 79x, trailing",
        "NVRM: Xid (PCI:0000:18:00) 79 no colon",
        "NVRM: Xid (PCI:",
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        cr_assert_not(parse(bad[i], &h), "accepted: %s", bad[i]);
}

Test(xid, reads_only_the_length_given)
{
    struct pf_xid_hit h;
    const char *s = "NVRM: Xid (PCI:0000:18:00): 79, x";
    cr_assert_not(pf_xid_parse_line(s, 20, &h));
}

Test(xid, classes_follow_the_table)
{
    int node[] = { 48, 63, 64, 74, 79, 92, 94, 95, 119, 120 };
    int app[] = { 13, 31, 43, 45 };

    for (size_t i = 0; i < sizeof(node) / sizeof(node[0]); i++)
        cr_assert_eq(pf_xid_info(node[i])->kind, PF_XID_NODE, "%d", node[i]);
    for (size_t i = 0; i < sizeof(app) / sizeof(app[0]); i++)
        cr_assert_eq(pf_xid_info(app[i])->kind, PF_XID_APP, "%d", app[i]);
    cr_assert_eq(pf_xid_info(61)->kind, PF_XID_OTHER);
    cr_assert_str_eq(pf_xid_info(64)->action, "replace");
    cr_assert(strstr(pf_xid_source, "xid-errors"));
}

Test(xid, matches_nvml_bus_ids)
{
    struct pf_xid_hit h;
    cr_assert(parse("NVRM: Xid (PCI:0000:1b:00): 79, x", &h));
    cr_assert(pf_xid_bus_matches("00000000:1B:00.0", &h));
    cr_assert_not(pf_xid_bus_matches("00000000:1C:00.0", &h));
    cr_assert_not(pf_xid_bus_matches("garbage", &h));
}

static void count(void *ctx, const struct pf_xid_hit *h)
{
    (void)h;
    (*(int *)ctx)++;
}

Test(xid, reads_a_log_file_across_chunks_and_long_lines)
{
    char path[] = "/tmp/pf_xid_logXXXXXX";
    int fd = mkstemp(path), n = 0, hits = 0;
    char err[PF_ERRLEN];
    FILE *f;

    cr_assert(fd >= 0);
    f = fdopen(fd, "w");
    for (int i = 0; i < 2000; i++)
        fprintf(f, "NVRM: Xid (PCI:0000:%02x:00): %d, pid=%d, filler filler\n",
                i % 256, 13 + i % 2, i);
    for (int i = 0; i < 20000; i++)
        fputc('x', f);                /* a line longer than a chunk */
    fputs("\nNVRM: Xid (PCI:0000:18:00): 79, last line without newline", f);
    fclose(f);
    cr_assert_eq(pf_xid_read_log(path, 64u << 20, count, &n, &hits, err),
                 PF_OK, "%s", err);
    cr_assert_eq(hits, 2001);
    cr_assert_eq(n, 2001);
    unlink(path);
}

Test(xid, a_missing_log_is_an_error_naming_it)
{
    char err[PF_ERRLEN];
    int hits;
    cr_assert_eq(pf_xid_read_log("/nonexistent/kmsg", 1024, NULL, NULL, &hits,
                                 err), PF_ERR_NOTFOUND);
    cr_assert(strstr(err, "/nonexistent/kmsg"));
}

Test(xid, lists_keep_distinct_xids_and_count_the_rest)
{
    struct pf_xid_list l;

    memset(&l, 0, sizeof(l));
    for (int i = 0; i < PF_MAX_XIDS + 5; i++)
        pf_xid_list_add(&l, 1000 + i);
    pf_xid_list_add(&l, 1000);
    cr_assert_eq(l.n, PF_MAX_XIDS);
    cr_assert_eq(l.more, 5);
    cr_assert_eq(l.x[0].count, 2);
}
