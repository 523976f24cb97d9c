/* libFuzzer target: catalog YAML on top of the embedded catalog. A rejected
 * override must leave the catalog as it was; lookups must stay safe. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_text.h"

#include "config/catalog.h"
#include "judge/floor.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pf_catalog cat = { 0 };
    char err[PF_ERRLEN];
    char *text = fuzz_text(data, size);
    int before;

    if (!text)
        return 0;
    /* Parse the embedded catalog once; each input starts from a copy. */
    static struct pf_catalog base;
    if (!base.items && pf_catalog_load(&base, NULL, err) != PF_OK)
        __builtin_trap();
    cat.items = malloc((size_t)base.n * sizeof(*cat.items));
    if (!cat.items)
        __builtin_trap();
    memcpy(cat.items, base.items, (size_t)base.n * sizeof(*cat.items));
    cat.n = cat.cap = base.n;
    before = cat.n;
    if (pf_catalog_parse(&cat, "fuzz.yaml", text, size, err) == PF_OK) {
        for (int i = 0; i < cat.n; i++) {
            const struct pf_instance *it = pf_catalog_find(&cat, cat.items[i].name);
            /* Names are unique, so the lookup finds the entry itself. */
            if (it != &cat.items[i] || it->nfloors < 0 ||
                it->nfloors > PF_MAX_FLOORS)
                __builtin_trap();
            /* The curve: points ascending, and every value it gives lies
             * within the values of its points (interpolation, flat ends). */
            for (int k = 1; k < it->nfloors; k++)
                if (it->floors[k - 1].nodes >= it->floors[k].nodes)
                    __builtin_trap();
            for (int nodes = 1; nodes <= 4096; nodes = nodes * 3 / 2 + 1) {
                struct pf_floor f;
                double lo = 1e300, hi = -1;
                if (!pf_instance_floor(it, nodes, &f))
                    continue;
                for (int k = 0; k < it->nfloors; k++) {
                    double g = it->floors[k].busbw_gbps;
                    lo = g < lo ? g : lo;
                    hi = g > hi ? g : hi;
                }
                if (!(f.busbw_gbps >= lo - 1e-9 && f.busbw_gbps <= hi + 1e-9))
                    __builtin_trap();
            }
        }
    } else if (cat.n < before) {
        __builtin_trap();
    }
    pf_catalog_free(&cat);
    free(text);
    return 0;
}
