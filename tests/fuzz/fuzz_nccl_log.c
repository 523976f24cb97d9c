/* libFuzzer target: NCCL's INFO log as the agent reads it back. Any text
 * must parse without crashing, leave every field terminated, and keep the
 * channel counts consistent (a NET channel is a channel, a Socket or GDR
 * channel is a NET channel). The first line also serves as an
 * NCCL_DEBUG_FILE pattern for the %h / %p expansion. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collective/nccl/nccl_log.h"
#include "fuzz_text.h"

#define TERMINATED(a) (strnlen((a), sizeof(a)) < sizeof(a))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_nccl_facts f;
    struct pf_fabric_facts coll;
    char out[256], err[PF_ERRLEN], pattern[512];
    char *text = fuzz_text(data, size);
    size_t n;

    if (!text)
        return 0;

    pf_nccl_log_parse(text, &f);
    if (!TERMINATED(f.version) || !TERMINATED(f.plugin) ||
        !TERMINATED(f.network) || !TERMINATED(f.transports))
        __builtin_trap();
    if (f.net_channels > f.channels || f.socket_channels > f.net_channels ||
        f.gdr_channels > f.net_channels || f.p2p_channels > f.channels ||
        f.shm_channels > f.channels || f.channels < 0)
        __builtin_trap();
    if (f.plugin_loaded && f.plugin_missing)
        __builtin_trap();
    memset(&coll, 0, sizeof(coll));
    pf_nccl_facts_apply(&f, &coll);
    if (!TERMINATED(coll.transport) || !TERMINATED(coll.nccl_network))
        __builtin_trap();

    n = strcspn(text, "\n");
    if (n >= sizeof(pattern))
        n = sizeof(pattern) - 1;
    memcpy(pattern, text, n);
    pattern[n] = '\0';
    if (pf_nccl_log_expand(pattern, "ip-10-0-0-1.ec2.internal", 4242, out,
                           sizeof(out), err) == PF_OK) {
        if (!TERMINATED(out))
            __builtin_trap();
    } else if (!err[0]) {
        __builtin_trap();
    }
    free(text);
    return 0;
}
