/* libFuzzer target: --peers "host:port,..." as typed on a command line or
 * in a config file. Invariants: an accepted list has ranks 0..n-1 in order,
 * a host and a port in 1..65535 each; a rejected one says which entry. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discover/discover.h"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_peer *list = NULL;
    char err[PF_ERRLEN] = "", *spec = fuzz_text(data, size);
    int n = -1;

    if (!spec)
        return 0;
    if (pf_parse_peers(spec, &list, &n, err) == PF_OK) {
        if (n < 1 || !list)
            __builtin_trap();
        for (int i = 0; i < n; i++)
            if (list[i].rank != i || !list[i].host[0] || list[i].port < 1 ||
                list[i].port > 65535 ||
                strnlen(list[i].host, sizeof(list[i].host)) ==
                    sizeof(list[i].host))
                __builtin_trap();
    } else if (!err[0] || list) {
        __builtin_trap();
    }
    free(list);
    free(spec);
    return 0;
}
