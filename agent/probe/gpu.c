/* GPUs through the CUDA runtime and the NCCL version, both by dlopen
 * (util/gpulib.h). A missing library is recorded in cuda_error /
 * nccl_error and the probe goes on.
 *
 * The libraries stay loaded: the NCCL engine loads them again later in the
 * same process, and unloading a CUDA runtime that has initialised the
 * driver leaves its exit handlers pointing at unmapped code. */
#include "probe.h"

#include <stdio.h>
#include <string.h>

#include "../util/gpulib.h"

static void probe_cuda(struct pf_node *node)
{
    struct pf_cudart c;
    char err[PF_ERRLEN] = "";
    int count = 0;

    memset(&c, 0, sizeof(c));
    node->cuda_loaded = false;
    node->gpu_count = 0;
    if (pf_cudart_load(&c, err) != PF_OK) {
        snprintf(node->cuda_error, sizeof(node->cuda_error), "%s", err);
        return;
    }
    node->cuda_loaded = true;
    if (pf_cuda_versions(&c, &node->cuda_runtime_version,
                         &node->cuda_driver_version, err) != PF_OK)
        snprintf(node->cuda_error, sizeof(node->cuda_error), "%s", err);
    if (pf_cuda_device_count(&c, &count, err) != PF_OK) {
        snprintf(node->cuda_error, sizeof(node->cuda_error), "%s", err);
        return;
    }
    node->gpu_count = count;
    for (int i = 0; i < count && i < PF_MAX_GPUS; i++) {
        struct pf_cuda_device d;
        if (pf_cuda_device_info(&c, i, &d, err) != PF_OK &&
            !node->cuda_error[0])
            snprintf(node->cuda_error, sizeof(node->cuda_error), "%s", err);
        snprintf(node->gpus[i].model, sizeof(node->gpus[i].model), "%s",
                 d.model);
        snprintf(node->gpus[i].pci_bus_id, sizeof(node->gpus[i].pci_bus_id),
                 "%s", d.pci_bus_id);
        node->gpus[i].mem_bytes = d.mem_bytes;
    }
}

static void probe_nccl(struct pf_node *node)
{
    struct pf_nccl n;
    char err[PF_ERRLEN] = "";

    memset(&n, 0, sizeof(n));
    node->nccl_loaded = false;
    node->nccl_version = 0;
    if (pf_nccl_load(&n, err) != PF_OK) {
        snprintf(node->nccl_error, sizeof(node->nccl_error), "%s", err);
        return;
    }
    node->nccl_loaded = true;
    if (pf_nccl_version(&n, &node->nccl_version, err) != PF_OK)
        snprintf(node->nccl_error, sizeof(node->nccl_error), "%s", err);
}

void pf_probe_gpu(struct pf_node *node)
{
    node->cuda_error[0] = node->nccl_error[0] = '\0';
    probe_cuda(node);
    probe_nccl(node);
    if (node->nccl_loaded)
        pf_probe_net_plugin(node);
}
