/* The floor curves the `catalog` command shows (curves.h). */
#include "curves.h"
#include "floor.h"

#include <stdbool.h>
#include <stdint.h>

#include "../config/catalog.h"

/* The node counts the curves are shown at. */
static const int pf_floor_show_nodes[] = { 2, 8, 32, 128, 512, 1024 };
static const int pf_floor_show_count =
    (int)(sizeof(pf_floor_show_nodes) / sizeof(pf_floor_show_nodes[0]));

/* The curves at the node counts a user plans for, as YAML comments: what a
 * 64-node job will be held to is readable before it runs. */
static void print_effective(const struct pf_catalog *cat, FILE *out)
{
    bool any = false;

    for (int i = 0; i < cat->n && !any; i++)
        any = cat->items[i].nfloors > 0;
    if (!any)
        return;
    fprintf(out, "# Effective all_reduce busbw floors (GB/s) by node count, "
            "NCCL engine on GPU\n# types, host engine elsewhere: linear in "
            "log2 N between the points above,\n# flat below the first "
            "multi-node point and beyond the last; ~ = an estimate\n"
            "# (a point or an interpolation resting on one). Judged from the "
            "size in\n# parentheses.\n# %-22s", "type");
    for (int k = 0; k < pf_floor_show_count; k++)
        fprintf(out, " %12d", pf_floor_show_nodes[k]);
    fputc('\n', out);
    for (int i = 0; i < cat->n; i++) {
        const struct pf_instance *it = &cat->items[i];
        if (!it->nfloors)
            continue;
        fprintf(out, "# %-22s", it->name);
        for (int k = 0; k < pf_floor_show_count; k++) {
            struct pf_floor f;
            char cell[32], size[16];
            if (!pf_instance_floor(it, pf_floor_show_nodes[k], &f)) {
                fprintf(out, " %12s", "-");
                continue;
            }
            if (f.from_bytes >= (1ull << 30) && !(f.from_bytes % (1ull << 30)))
                snprintf(size, sizeof(size), "%lluG",
                         (unsigned long long)(f.from_bytes >> 30));
            else if (f.from_bytes >= (1ull << 20) &&
                     !(f.from_bytes % (1ull << 20)))
                snprintf(size, sizeof(size), "%lluM",
                         (unsigned long long)(f.from_bytes >> 20));
            else
                snprintf(size, sizeof(size), "%llu",
                         (unsigned long long)f.from_bytes);
            snprintf(cell, sizeof(cell), "%s%.1f (%s)",
                     f.verified ? "" : "~", f.busbw_gbps,
                     f.from_bytes ? size : "max");
            fprintf(out, " %12s", cell);
        }
        fputc('\n', out);
    }
}

static void size_text(char *out, size_t len, uint64_t b)
{
    if (b >= (1ull << 30) && !(b % (1ull << 30)))
        snprintf(out, len, "%lluG", (unsigned long long)(b >> 30));
    else if (b >= (1ull << 20) && !(b % (1ull << 20)))
        snprintf(out, len, "%lluM", (unsigned long long)(b >> 20));
    else
        snprintf(out, len, "%llu", (unsigned long long)b);
}

/* The curves by message size where a type names more than one: the floor
 * at each size a point names, at the node counts of the table above. */
static void print_by_size(const struct pf_catalog *cat, FILE *out)
{
    bool head = false;

    for (int i = 0; i < cat->n; i++) {
        const struct pf_instance *it = &cat->items[i];
        bool any = false;
        for (int f = 0; f < it->nfloors; f++)
            any = any || it->floors[f].nsizes > 1;
        if (!any)
            continue;
        if (!head)
            fprintf(out, "# Floors by message size (GB/s): judged at the "
                    "largest size swept that has one,\n# linear in log2 "
                    "size between two, flat beyond the last.\n");
        head = true;
        for (int k = 0; k < pf_floor_show_count; k++) {
            struct pf_floor fl;
            struct pf_size_floor sz[PF_MAX_SIZE_FLOORS];
            int n;
            if (!pf_instance_floor(it, pf_floor_show_nodes[k], &fl))
                continue;
            n = pf_floor_sizes(&fl, sz);
            fprintf(out, "# %-22s %5d nodes:", it->name, pf_floor_show_nodes[k]);
            for (int s = 0; s < n; s++) {
                char t[16];
                size_text(t, sizeof(t), sz[s].bytes);
                fprintf(out, " %s %s%.1f", t, fl.verified ? "" : "~",
                        sz[s].gbps);
            }
            fputc('\n', out);
        }
    }
}

void pf_curves_print(const struct pf_catalog *cat, FILE *out)
{
    pf_catalog_print(cat, out);
    print_effective(cat, out);
    print_by_size(cat, out);
}

pf_err pf_curves_print_json(const struct pf_catalog *cat, FILE *out,
                            char *err)
{
    cJSON *root = pf_catalog_json(cat), *o;
    char *text;
    int i = 0;

    if (!root)
        return pf_fail(err, PF_ERR_NOMEM, "catalog JSON: out of memory");
    cJSON_ArrayForEach(o, cJSON_GetObjectItem(root, "instances")) {
        const struct pf_instance *it;
        if (i >= cat->n)
            break;
        it = &cat->items[i++];
        cJSON *eff = cJSON_AddArrayToObject(o, "effective_floors");
        for (int k = 0; it->nfloors && k < pf_floor_show_count; k++) {
            struct pf_floor f;
            if (pf_instance_floor(it, pf_floor_show_nodes[k], &f))
                cJSON_AddItemToArray(eff, pf_catalog_point_json(&f, "nodes"));
        }
    }
    text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return pf_fail(err, PF_ERR_NOMEM, "catalog JSON: out of memory");
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return PF_OK;
}
