/* probe: node facts, no network (IMDSv2 aside). Fills run->node and
 * run->instance. Every path is read under cfg.sysfs_root / cfg.dev_root so
 * tests run on fixture trees. A missing library or device is a fact, not an
 * error: pf_probe only fails on bad input (PF_ERR_USAGE). */
#ifndef PF_PROBE_H
#define PF_PROBE_H

#include "../types/run.h"

pf_err pf_probe(struct pf_run *run, char *err);

/* Pieces, one per file, each filling its part of the node; pf_probe calls
 * them in this order. Exposed for the unit tests. */

/* instance.c: type from cfg.instance_type, DMI product_name, then
 * node_label (the Node's node.kubernetes.io/instance-type in Kubernetes
 * mode, NULL elsewhere), then IMDSv2 (only when DMI says Amazon or cannot
 * be read, and cfg.no_imds is off). */
void pf_probe_instance(const struct pf_config *cfg, struct pf_node *node,
                       const char *node_label);
/* "ml.p5.48xlarge\n" -> "p5.48xlarge"; false when s does not look like an
 * EC2 instance type (family.size, lowercase letters, digits, '-'). */
bool pf_instance_type_normalize(const char *s, char *out, size_t len);

/* imds.c: IMDSv2 token PUT then GET instance-type, 1 s in all. */
pf_err pf_imds_instance_type(const char *base_url, char *out, size_t len,
                             char *err);

/* efa.c: EFA devices by PCI id, ports, uverbs files, module, GDR. */
void pf_probe_efa(const struct pf_config *cfg, struct pf_node *node);
/* What the monitor reads every interval: the device scan (ports
 * included), the uverbs files' presence (not opened: a job may hold
 * them) and the module; no counters (it reads every counter file itself),
 * no PCI or GDR facts. */
void pf_probe_efa_quiet(const struct pf_config *cfg, struct pf_node *node);
/* Only the device scan (used again by the p5en re-count). */
void pf_probe_efa_devices(const struct pf_config *cfg, struct pf_node *node);
/* PCI vendor/device pair is an EFA function. */
bool pf_is_efa_pci(unsigned vendor, unsigned device);

/* limits.c: RLIMIT_MEMLOCK and huge pages from <sysfs_root>/proc/meminfo. */
void pf_probe_limits(const struct pf_config *cfg, struct pf_node *node);

/* fabric.c: libfabric by dlopen; fi_getinfo(efa, FI_EP_RDM) domains,
 * asked only when the device scan found EFA devices (node->efa_count). */
void pf_probe_fabric(const struct pf_config *cfg, struct pf_node *node);
/* Whether this host's libfabric lists a provider of that name (any
 * endpoint type); false when libfabric does not load. */
bool pf_fabric_lists_provider(const struct pf_config *cfg, const char *name);

/* names.c: the values that name something on this host name something
 * that exists: fabric_provider a libfabric provider, bind_addr and every
 * fabric_addrs entry an address of this host. PF_ERR_USAGE with a message
 * that starts with ConfigNamesNothing otherwise. Run before the Node is
 * touched. */
pf_err pf_probe_config_names(const struct pf_config *cfg, char *err);
/* The built-in list of libfabric provider names ("ofi_" prefix optional). */
bool pf_provider_name_known(const char *name, size_t len);

/* gpu.c: CUDA runtime and NCCL by dlopen (util/gpulib.h), then, when
 * NCCL loads, its net plugin. */
void pf_probe_gpu(struct pf_node *node);

/* net_plugin.c: NCCL's net plugin by NCCL's own lookup (NCCL_NET_PLUGIN,
 * then libnccl-net.so), and the plugin API version it exports. */
void pf_probe_net_plugin(struct pf_node *node);

#endif
