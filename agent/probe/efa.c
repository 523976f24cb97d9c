/* EFA devices from sysfs, their uverbs files, the efa module, and GDR.
 *
 * A device counts as EFA by its PCI ids (vendor 0x1d0f, device
 * 0xefa0..0xefa3), never by name: p6-b200 shows extra non-EFA `ibp*`
 * RDMA devices and udev renames efa_N to rdmap<bus>s<slot>.
 *
 * GDR flag: true when an EFA device can do RDMA read, which GPUDirect
 * RDMA over EFA needs. sysfs has no capability bit for it (that is
 * efadv_query_device, which would need rdma-core), so it is read from
 *   1. <pci device>/gdr = 1, written by EFA drivers built with GDR, else
 *   2. the device generation: 0xefa0 (first EFA, c5n/p3dn era) has no
 *      RDMA read; 0xefa1 and later (p4d onward) have it. */
#include "probe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/fsutil.h"
#include "hw_counters.h"

#define EFA_VENDOR 0x1d0f

bool pf_is_efa_pci(unsigned vendor, unsigned device)
{
    return vendor == EFA_VENDOR && device >= 0xefa0 && device <= 0xefa3;
}

static bool read_hex(const char *path, unsigned *out)
{
    char buf[32], err[PF_ERRLEN], *end;
    unsigned long v;

    if (pf_read_line(path, buf, sizeof(buf), err) != PF_OK || !buf[0])
        return false;
    errno = 0;
    v = strtoul(buf, &end, 16);
    if (errno || *end)
        return false;
    *out = (unsigned)v;
    return true;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int not_dot(const struct dirent *d) { return d->d_name[0] != '.'; }

/* First uverbsN under <ibdev>/device/infiniband_verbs, "" if none. */
static void find_uverbs(const char *ibdev, char *out, size_t len)
{
    char path[PF_PATH_MAX];
    struct dirent **list;
    int n;

    out[0] = '\0';
    snprintf(path, sizeof(path), "%s/device/infiniband_verbs", ibdev);
    n = scandir(path, &list, not_dot, alphasort);
    for (int i = 0; i < n; i++) {
        if (!out[0] && !strncmp(list[i]->d_name, "uverbs", 6))
            snprintf(out, len, "%s", list[i]->d_name);
        free(list[i]);
    }
    if (n >= 0)
        free(list);
}

static void fill_dev(const char *ibdev, const char *name, unsigned vendor,
                     unsigned device, struct pf_efa_dev *d)
{
    char path[PF_PATH_MAX], link[PF_PATH_MAX], err[PF_ERRLEN];
    ssize_t n;
    const char *base;

    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", name);
    d->vendor = vendor;
    d->device = device;
    snprintf(path, sizeof(path), "%s/device", ibdev);
    n = readlink(path, link, sizeof(link) - 1);
    if (n > 0) {
        link[n] = '\0';
        base = strrchr(link, '/');
        snprintf(d->pci_addr, sizeof(d->pci_addr), "%s", base ? base + 1 : link);
    }
    snprintf(path, sizeof(path), "%s/ports/1/state", ibdev);
    if (pf_read_line(path, d->port_state, sizeof(d->port_state), err) != PF_OK)
        snprintf(d->port_state, sizeof(d->port_state), "unreadable");
    d->port_active = strstr(d->port_state, "ACTIVE") != NULL;
    find_uverbs(ibdev, d->uverbs, sizeof(d->uverbs));
}

/* The device scan; counters read too unless !counters (the monitor reads
 * every counter file itself). */
static void scan_devices(const struct pf_config *cfg, struct pf_node *node,
                         bool counters)
{
    char cls[PF_PATH_MAX], ibdev[PF_PATH_MAX], path[PF_PATH_MAX];
    char err[PF_ERRLEN];
    struct dirent **list;
    int n;

    node->efa_count = 0;
    node->non_efa_ib_count = 0;
    node->efa_ports_active = 0;
    memset(node->efa, 0, sizeof(node->efa));
    if (pf_path_join(cls, sizeof(cls), cfg->sysfs_root, "/sys/class/infiniband",
                     err) != PF_OK)
        return;
    n = scandir(cls, &list, not_dot, alphasort);
    if (n < 0)
        return;             /* no RDMA devices at all */
    for (int i = 0; i < n; i++) {
        unsigned vendor = 0, device = 0;
        bool ids;

        snprintf(ibdev, sizeof(ibdev), "%s/%s", cls, list[i]->d_name);
        snprintf(path, sizeof(path), "%s/device/vendor", ibdev);
        ids = read_hex(path, &vendor);
        snprintf(path, sizeof(path), "%s/device/device", ibdev);
        ids = ids && read_hex(path, &device);
        if (!ids || !pf_is_efa_pci(vendor, device)) {
            node->non_efa_ib_count++;
        } else {
            if (node->efa_count < PF_MAX_EFA) {
                struct pf_efa_dev *d = &node->efa[node->efa_count];
                fill_dev(ibdev, list[i]->d_name, vendor, device, d);
                if (counters)
                    pf_hwc_read(cfg->sysfs_root, d->name, &d->hwc);
                if (d->port_active)
                    node->efa_ports_active++;
            }
            node->efa_count++;
        }
        free(list[i]);
    }
    free(list);
}

/* Count and open the uverbs files of the EFA devices. When sysfs maps
 * every EFA device to its uverbsN, only those files are checked (p6-b200's
 * ibp* devices have their own); otherwise every uverbs* file counts. */
void pf_probe_efa_devices(const struct pf_config *cfg, struct pf_node *node)
{
    scan_devices(cfg, node, true);
}

/* open_them false: presence only (the monitor, which must not hold a
 * job's device even for a moment). */
static void probe_uverbs(const struct pf_config *cfg, struct pf_node *node,
                         bool open_them)
{
    char dir[PF_PATH_MAX], path[PF_PATH_MAX], err[PF_ERRLEN];
    char names[PF_MAX_EFA][16];
    int nnames = 0, stored = node->efa_count < PF_MAX_EFA ? node->efa_count
                                                           : PF_MAX_EFA;
    bool mapped = stored > 0;

    node->uverbs_present = node->uverbs_openable = 0;
    node->uverbs_error[0] = '\0';
    if (pf_path_join(dir, sizeof(dir), cfg->dev_root, "/dev/infiniband",
                     err) != PF_OK)
        return;
    for (int i = 0; i < stored; i++)
        if (!node->efa[i].uverbs[0])
            mapped = false;
    if (mapped) {
        for (int i = 0; i < stored; i++)
            snprintf(names[nnames++], sizeof(names[0]), "%s", node->efa[i].uverbs);
    } else {
        struct dirent **list;
        int n = scandir(dir, &list, not_dot, alphasort);
        for (int i = 0; i < n; i++) {
            if (!strncmp(list[i]->d_name, "uverbs", 6) && nnames < PF_MAX_EFA)
                snprintf(names[nnames++], sizeof(names[0]), "%s",
                         list[i]->d_name);
            free(list[i]);
        }
        if (n >= 0)
            free(list);
    }

    for (int i = 0; i < nnames; i++) {
        int fd;

        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (access(path, F_OK) != 0) {
            if (!node->uverbs_error[0])
                snprintf(node->uverbs_error, sizeof(node->uverbs_error),
                         "%s: %s", path, strerror(errno));
            continue;
        }
        node->uverbs_present++;
        if (!open_them)
            continue;
        /* Opening proves the container was given the device (cgroup
         * device rules); closing at once releases it. */
        fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            if (!node->uverbs_error[0])
                snprintf(node->uverbs_error, sizeof(node->uverbs_error),
                         "%s: %s", path, strerror(errno));
            continue;
        }
        close(fd);
        node->uverbs_openable++;
    }
}

static void probe_module(const struct pf_config *cfg, struct pf_node *node)
{
    char path[PF_PATH_MAX], err[PF_ERRLEN];

    node->efa_module_loaded = false;
    node->efa_module_version[0] = '\0';
    if (pf_path_join(path, sizeof(path), cfg->sysfs_root, "/sys/module/efa",
                     err) != PF_OK || !is_dir(path))
        return;
    node->efa_module_loaded = true;
    /* In-tree builds of the driver export no version: "" then. */
    if (pf_path_join(path, sizeof(path), cfg->sysfs_root,
                     "/sys/module/efa/version", err) == PF_OK)
        pf_read_line(path, node->efa_module_version,
                     sizeof(node->efa_module_version), err);
}

/* EFA PCI functions whether or not a driver is bound: tells "module not
 * loaded" apart from "the hardware is not there". */
static void probe_pci(const struct pf_config *cfg, struct pf_node *node)
{
    char dir[PF_PATH_MAX], path[PF_PATH_MAX], err[PF_ERRLEN];
    struct dirent **list;
    int n;

    node->efa_pci_count = 0;
    if (pf_path_join(dir, sizeof(dir), cfg->sysfs_root, "/sys/bus/pci/devices",
                     err) != PF_OK)
        return;
    n = scandir(dir, &list, not_dot, alphasort);
    for (int i = 0; i < n; i++) {
        unsigned vendor = 0, device = 0;
        snprintf(path, sizeof(path), "%s/%s/vendor", dir, list[i]->d_name);
        if (read_hex(path, &vendor) && vendor == EFA_VENDOR) {
            snprintf(path, sizeof(path), "%s/%s/device", dir, list[i]->d_name);
            if (read_hex(path, &device) && pf_is_efa_pci(vendor, device))
                node->efa_pci_count++;
        }
        free(list[i]);
    }
    if (n >= 0)
        free(list);
}

static void probe_gdr(const struct pf_config *cfg, struct pf_node *node)
{
    char path[PF_PATH_MAX], rel[PF_PATH_MAX], buf[16], err[PF_ERRLEN];
    int stored = node->efa_count < PF_MAX_EFA ? node->efa_count : PF_MAX_EFA;

    node->gdr_supported = false;
    for (int i = 0; i < stored; i++) {
        snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/device/gdr",
                 node->efa[i].name);
        if (pf_path_join(path, sizeof(path), cfg->sysfs_root, rel, err) == PF_OK &&
            pf_read_line(path, buf, sizeof(buf), err) == PF_OK &&
            !strcmp(buf, "1"))
            node->gdr_supported = true;
        if (node->efa[i].device >= 0xefa1)
            node->gdr_supported = true;
    }
}

void pf_probe_efa(const struct pf_config *cfg, struct pf_node *node)
{
    pf_probe_efa_devices(cfg, node);
    probe_uverbs(cfg, node, true);
    probe_module(cfg, node);
    probe_pci(cfg, node);
    probe_gdr(cfg, node);
}

void pf_probe_efa_quiet(const struct pf_config *cfg, struct pf_node *node)
{
    scan_devices(cfg, node, false);
    probe_uverbs(cfg, node, false);
    probe_module(cfg, node);
}
