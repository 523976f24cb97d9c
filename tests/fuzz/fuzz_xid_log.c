/* Fuzz the kernel-log XID parser (probe/xid.c): any bytes as dmesg text
 * or /dev/kmsg records, line by line and as a file read in chunks. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/xid.h"

static void on_hit(void *ctx, const struct pf_xid_hit *h)
{
    struct pf_xid_list *l = ctx;
    /* what the probe does with a hit */
    if (h->busid[sizeof(h->busid) - 1] != '\0')
        abort();
    pf_xid_list_add(l, h->xid);
    (void)pf_xid_bus_matches("00000000:18:00.0", h);
    (void)pf_xid_info(h->xid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_xid_list l;
    char path[] = "/tmp/pf_fuzz_xidXXXXXX";
    char err[PF_ERRLEN];
    int fd, hits = 0;

    memset(&l, 0, sizeof(l));
    pf_xid_scan((const char *)data, size, on_hit, &l);
    fd = mkstemp(path);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) == (ssize_t)size)
        pf_xid_read_log(path, size + 1, on_hit, &l, &hits, err);
    close(fd);
    unlink(path);
    return 0;
}
