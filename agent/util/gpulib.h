/* gpulib: the CUDA runtime and NCCL, loaded with dlopen.
 *
 * The agent must build without CUDA or NCCL headers and start on machines
 * without either library, so the few types and entry points it uses are
 * declared here under pf_ names and resolved at run time. Their values and
 * layouts are checked against the real headers by tests/unit/
 * tests/unit/util/test_gpulib_decls.c wherever /usr/local/cuda/include exists.
 *
 * Library search (first that loads wins):
 *   CUDA runtime: $EFA_PREFLIGHT_CUDART, libcudart.so, libcudart.so.13,
 *                 .12, .11
 *   NCCL:         $EFA_PREFLIGHT_NCCL, libnccl.so.2
 * A missing library or symbol is a PF_ERR_UNSUPPORTED message, never a
 * crash. Loading twice is cheap (dlopen reference counts). */
#ifndef PF_GPULIB_H
#define PF_GPULIB_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define PF_GPULIB_PATH_MAX 1024

/* The opaque and enum types. The declaration check defines
 * PF_GPULIB_REAL_TYPES and maps these names onto the real header types, so
 * the compiler compares every function pointer below with the real
 * prototype. Enums are passed as int: same size and registers. */
#ifndef PF_GPULIB_REAL_TYPES
typedef int pf_cuda_error_t;                       /* cudaError_t */
typedef int pf_cuda_memcpy_kind_t;                 /* enum cudaMemcpyKind */
typedef struct pf_cuda_stream_s *pf_cuda_stream_t; /* cudaStream_t */
typedef struct pf_cuda_event_s *pf_cuda_event_t;   /* cudaEvent_t */
typedef struct pf_cuda_prop_s pf_cuda_device_prop; /* struct cudaDeviceProp */
typedef int pf_nccl_result_t;                      /* ncclResult_t */
typedef int pf_nccl_datatype_t;                    /* ncclDataType_t */
typedef int pf_nccl_redop_t;                       /* ncclRedOp_t */
typedef struct pf_nccl_comm_s *pf_nccl_comm_t;     /* ncclComm_t */
typedef struct {
    char internal[128];                            /* NCCL_UNIQUE_ID_BYTES */
} pf_nccl_unique_id;                               /* ncclUniqueId */
#endif

/* ------------------------------------------------------- CUDA runtime */

enum {
    PF_CUDA_SUCCESS = 0,                      /* cudaSuccess */
    PF_CUDA_ERROR_NO_DEVICE = 100,            /* cudaErrorNoDevice */
    PF_CUDA_ERROR_NOT_READY = 600,            /* cudaErrorNotReady */
};

enum {                                        /* enum cudaMemcpyKind */
    PF_CUDA_MEMCPY_HOST_TO_DEVICE = 1,
    PF_CUDA_MEMCPY_DEVICE_TO_HOST = 2,
    PF_CUDA_MEMCPY_DEVICE_TO_DEVICE = 3,
};

#define PF_CUDA_STREAM_NON_BLOCKING 0x01      /* cudaStreamNonBlocking */
#define PF_CUDA_EVENT_DEFAULT 0x00            /* cudaEventDefault */

/* cudaGetDeviceProperties writes a struct whose size changes between CUDA
 * versions (1008 bytes in 13.0); name[256] is at offset 0 and
 * totalGlobalMem (size_t) at offset 288 in 11, 12 and 13. Pass a buffer of
 * PF_CUDA_PROP_BUF bytes. */
#define PF_CUDA_PROP_BUF 4096
#define PF_CUDA_PROP_NAME_OFF 0
#define PF_CUDA_PROP_NAME_LEN 256
#define PF_CUDA_PROP_TOTALMEM_OFF 288

struct pf_cudart {
    void *dl;
    char path[PF_GPULIB_PATH_MAX];
    pf_cuda_error_t (*cudaGetDeviceCount)(int *count);
    pf_cuda_error_t (*cudaSetDevice)(int device);
    pf_cuda_error_t (*cudaGetDeviceProperties)(pf_cuda_device_prop *prop,
                                               int device);
    pf_cuda_error_t (*cudaDeviceGetPCIBusId)(char *bus_id, int len,
                                             int device);
    pf_cuda_error_t (*cudaRuntimeGetVersion)(int *version);
    pf_cuda_error_t (*cudaDriverGetVersion)(int *version);
    const char *(*cudaGetErrorString)(pf_cuda_error_t e);
    pf_cuda_error_t (*cudaMalloc)(void **ptr, size_t size);
    pf_cuda_error_t (*cudaFree)(void *ptr);
    pf_cuda_error_t (*cudaMallocHost)(void **ptr, size_t size);
    pf_cuda_error_t (*cudaFreeHost)(void *ptr);
    pf_cuda_error_t (*cudaMemcpyAsync)(void *dst, const void *src,
                                       size_t count,
                                       pf_cuda_memcpy_kind_t kind,
                                       pf_cuda_stream_t stream);
    pf_cuda_error_t (*cudaMemsetAsync)(void *ptr, int value, size_t count,
                                       pf_cuda_stream_t stream);
    pf_cuda_error_t (*cudaStreamCreateWithFlags)(pf_cuda_stream_t *stream,
                                                 unsigned int flags);
    pf_cuda_error_t (*cudaStreamDestroy)(pf_cuda_stream_t stream);
    pf_cuda_error_t (*cudaStreamQuery)(pf_cuda_stream_t stream);
    pf_cuda_error_t (*cudaEventCreateWithFlags)(pf_cuda_event_t *event,
                                                unsigned int flags);
    pf_cuda_error_t (*cudaEventDestroy)(pf_cuda_event_t event);
    pf_cuda_error_t (*cudaEventRecord)(pf_cuda_event_t event,
                                       pf_cuda_stream_t stream);
    pf_cuda_error_t (*cudaEventQuery)(pf_cuda_event_t event);
    pf_cuda_error_t (*cudaEventElapsedTime)(float *ms, pf_cuda_event_t start,
                                            pf_cuda_event_t end);
};

pf_err pf_cudart_load(struct pf_cudart *c, char *err);
void pf_cudart_unload(struct pf_cudart *c);

/* cudaGetErrorString with a fallback when the table is not loaded. */
const char *pf_cuda_strerror(const struct pf_cudart *c, pf_cuda_error_t e);

/* Probe helpers: each fills err with the CUDA call and error on failure. */
pf_err pf_cuda_versions(const struct pf_cudart *c, int *runtime, int *driver,
                        char *err);
/* No device (cudaErrorNoDevice) is *count = 0 and PF_OK: absence is a fact
 * for the probe. Other failures (35: no driver / driver too old) set
 * *count = 0 and return PF_ERR_ENGINE with the CUDA message. */
pf_err pf_cuda_device_count(const struct pf_cudart *c, int *count, char *err);
/* What the probe wants of one device. */
struct pf_cuda_device {
    char model[96];
    char pci_bus_id[32];              /* "0000:18:00.0" */
    uint64_t mem_bytes;
};
pf_err pf_cuda_device_info(const struct pf_cudart *c, int device,
                           struct pf_cuda_device *out, char *err);

/* ---------------------------------------------------------------- NCCL */

#define PF_NCCL_UNIQUE_ID_BYTES 128

enum {                                            /* ncclResult_t */
    PF_NCCL_SUCCESS = 0,
    PF_NCCL_UNHANDLED_CUDA_ERROR = 1,
    PF_NCCL_SYSTEM_ERROR = 2,
    PF_NCCL_INTERNAL_ERROR = 3,
    PF_NCCL_INVALID_ARGUMENT = 4,
    PF_NCCL_INVALID_USAGE = 5,
    PF_NCCL_REMOTE_ERROR = 6,
    PF_NCCL_IN_PROGRESS = 7,
};

enum { PF_NCCL_FLOAT32 = 7 };                     /* ncclFloat32 */
enum { PF_NCCL_SUM = 0 };                         /* ncclSum */

/* ncclConfig_t as NCCL 2.18 lays it out. NCCL reads only the fields that
 * the version in the struct had, so newer NCCLs accept it as is. */
#define PF_NCCL_CONFIG_MAGIC 0xcafebeefu
#define PF_NCCL_CONFIG_VERSION 21800              /* NCCL_VERSION(2,18,0) */
#define PF_NCCL_CONFIG_UNDEF_INT INT32_MIN        /* NCCL_CONFIG_UNDEF_INT */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
} pf_nccl_config_t;

#ifndef PF_GPULIB_REAL_TYPES
typedef pf_nccl_config_t pf_nccl_config_arg_t;    /* ncclConfig_t */
#endif

/* NCCL_CONFIG_INITIALIZER for the layout above. */
void pf_nccl_config_init(pf_nccl_config_t *cfg);

/* Oldest NCCL the engine drives: nonblocking init and ncclConfig_t with
 * splitShare. */
#define PF_NCCL_MIN_VERSION 21800

struct pf_nccl {
    void *dl;
    char path[PF_GPULIB_PATH_MAX];
    pf_nccl_result_t (*ncclGetVersion)(int *version);
    pf_nccl_result_t (*ncclGetUniqueId)(pf_nccl_unique_id *id);
    pf_nccl_result_t (*ncclCommInitRankConfig)(pf_nccl_comm_t *comm,
                                               int nranks,
                                               pf_nccl_unique_id id, int rank,
                                               pf_nccl_config_arg_t *config);
    /* 2.18: the engine splits its nonblocking communicator into a
     * blocking one for the collectives (see engine_nccl.c) */
    pf_nccl_result_t (*ncclCommSplit)(pf_nccl_comm_t comm, int color, int key,
                                      pf_nccl_comm_t *newcomm,
                                      pf_nccl_config_arg_t *config);
    pf_nccl_result_t (*ncclCommDestroy)(pf_nccl_comm_t comm);
    pf_nccl_result_t (*ncclCommAbort)(pf_nccl_comm_t comm);
    pf_nccl_result_t (*ncclCommGetAsyncError)(pf_nccl_comm_t comm,
                                              pf_nccl_result_t *async_error);
    const char *(*ncclGetErrorString)(pf_nccl_result_t result);
    /* >= 2.13; NULL when the library lacks it. */
    const char *(*ncclGetLastError)(pf_nccl_comm_t comm);
    pf_nccl_result_t (*ncclAllReduce)(const void *sendbuff, void *recvbuff,
                                      size_t count,
                                      pf_nccl_datatype_t datatype,
                                      pf_nccl_redop_t op,
                                      pf_nccl_comm_t comm,
                                      pf_cuda_stream_t stream);
    pf_nccl_result_t (*ncclGroupStart)(void);
    pf_nccl_result_t (*ncclGroupEnd)(void);
};

pf_err pf_nccl_load(struct pf_nccl *n, char *err);
void pf_nccl_unload(struct pf_nccl *n);

const char *pf_nccl_strerror(const struct pf_nccl *n, pf_nccl_result_t r);
/* ncclGetVersion; *version is X*10000+Y*100+Z (X*1000+Y*100+Z before 2.9,
 * normalised here to the new form). */
pf_err pf_nccl_version(const struct pf_nccl *n, int *version, char *err);
/* "2.28.9" from a version code. */
void pf_nccl_version_str(int version, char *buf, size_t len);

#endif
