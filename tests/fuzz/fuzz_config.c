/* libFuzzer target: the config YAML loader must reject or accept any input
 * without crashing, leaking or leaving a half-set string unterminated. */
#include <stdint.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_config cfg;
    char err[PF_ERRLEN];

    pf_config_defaults(&cfg);
    if (pf_config_load_yaml_buf(&cfg, "fuzz.yaml", (const char *)data, size,
                                err) != PF_OK) {
        /* Every error names the file. */
        if (strncmp(err, "fuzz.yaml", 9) != 0)
            __builtin_trap();
        pf_config_free(&cfg);
        return 0;
    }
    /* Accepted strings stay terminated inside their fields. */
    if ((cfg.peers && strlen(cfg.peers) > size) ||
        strnlen(cfg.fabric_provider, sizeof(cfg.fabric_provider)) ==
            sizeof(cfg.fabric_provider))
        __builtin_trap();
    pf_config_free(&cfg);
    return 0;
}
