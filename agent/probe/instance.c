/* Instance type: --instance-type, else DMI product_name, else (Kubernetes)
 * the Node's node.kubernetes.io/instance-type label, else IMDSv2.
 *
 * IMDS is asked only when DMI says the vendor is Amazon or DMI cannot be
 * read at all (some containers hide it), so a plain machine elsewhere never
 * sends a packet to the link-local metadata address. */
#include "probe.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../util/fsutil.h"
#include "../util/log.h"

bool pf_instance_type_normalize(const char *s, char *out, size_t len)
{
    char buf[128];
    size_t n, dots = 0;
    const char *p;

    while (*s && isspace((unsigned char)*s))
        s++;
    snprintf(buf, sizeof(buf), "%s", s);
    n = strlen(buf);
    while (n > 0 && isspace((unsigned char)buf[n - 1]))
        buf[--n] = '\0';
    p = buf;
    if (!strncmp(p, "ml.", 3))  /* SageMaker HyperPod names */
        p += 3;
    if (!islower((unsigned char)p[0]))
        return false;
    for (const char *c = p; *c; c++) {
        if (*c == '.')
            dots++;
        else if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) &&
                 *c != '-')
            return false;
    }
    if (dots != 1 || p[strlen(p) - 1] == '.' || strlen(p) >= len)
        return false;
    snprintf(out, len, "%s", p);
    return true;
}

/* Read a DMI attribute; false when unreadable. */
static bool read_dmi(const struct pf_config *cfg, const char *attr, char *buf,
                     size_t len)
{
    char path[PF_PATH_MAX], rel[128], err[PF_ERRLEN];

    snprintf(rel, sizeof(rel), "/sys/devices/virtual/dmi/id/%s", attr);
    if (pf_path_join(path, sizeof(path), cfg->sysfs_root, rel, err) != PF_OK)
        return false;
    return pf_read_line(path, buf, len, err) == PF_OK;
}

static void set_type(struct pf_node *node, const char *type,
                     const char *source)
{
    snprintf(node->instance_type, sizeof(node->instance_type), "%s", type);
    snprintf(node->instance_source, sizeof(node->instance_source), "%s",
             source);
}

void pf_probe_instance(const struct pf_config *cfg, struct pf_node *node,
                       const char *node_label)
{
    char product[128] = "", sys_vendor[128] = "", bios_vendor[128] = "";
    char type[64], err[PF_ERRLEN] = "";
    bool have_product, have_sys, have_bios, amazon;

    node->instance_type[0] = '\0';
    node->instance_note[0] = '\0';
    if (cfg->instance_type[0]) {
        /* Taken as given (ml. stripped): an unknown name is a verdict
         * matter, not bad input. */
        const char *t = cfg->instance_type;
        if (!strncmp(t, "ml.", 3))
            t += 3;
        set_type(node, t, "flag");
        return;
    }

    have_product = read_dmi(cfg, "product_name", product, sizeof(product));
    if (have_product && pf_instance_type_normalize(product, type, sizeof(type))) {
        set_type(node, type, "dmi");
        return;
    }
    /* A pod that cannot read DMI: the kubelet's label on its Node (the
     * cloud provider's answer, ml.-prefixed on HyperPod), before asking
     * IMDS, which a pod often cannot reach (hop limit 1). */
    if (node_label && pf_instance_type_normalize(node_label, type, sizeof(type))) {
        set_type(node, type, "label");
        return;
    }
    have_sys = read_dmi(cfg, "sys_vendor", sys_vendor, sizeof(sys_vendor));
    have_bios = read_dmi(cfg, "bios_vendor", bios_vendor, sizeof(bios_vendor));
    amazon = strstr(sys_vendor, "Amazon") || strstr(bios_vendor, "Amazon");
    set_type(node, "", "none");

    if (cfg->no_imds) {
        snprintf(node->instance_note, sizeof(node->instance_note),
                 "DMI product_name %s%s%s; IMDS not asked (no_imds)",
                 have_product ? "'" : "unreadable", have_product ? product : "",
                 have_product ? "' is not an instance type" : "");
        return;
    }
    if (!amazon && (have_sys || have_bios)) {
        snprintf(node->instance_note, sizeof(node->instance_note),
                 "DMI vendor '%s' is not Amazon EC2; IMDS not asked",
                 have_sys ? sys_vendor : bios_vendor);
        return;
    }
    if (pf_imds_instance_type(cfg->imds_endpoint[0] ? cfg->imds_endpoint
                                                    : "http://169.254.169.254",
                              product, sizeof(product), err) == PF_OK &&
        pf_instance_type_normalize(product, type, sizeof(type))) {
        set_type(node, type, "imds");
        return;
    }
    if (!err[0])
        snprintf(err, sizeof(err), "IMDS returned '%.64s', not an instance type",
                 product);
    pf_debug("instance type: %s", err);
    snprintf(node->instance_note, sizeof(node->instance_note),
             "DMI product_name unreadable or not an instance type; %s", err);
}
