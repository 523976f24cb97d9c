/* gpulib's hand-written CUDA/NCCL declarations against the real headers.
 *
 * mk/nccl_double.mk compiles this file with -isystem /usr/local/cuda/include
 * when that folder exists; then every check below is a compile-time
 * assertion (enum values, struct offsets, and each function pointer type in
 * struct pf_cudart / struct pf_nccl against the real prototype) and the
 * test re-checks the layout at run time. Without the headers it skips. */
#include <criterion/criterion.h>
#include <stddef.h>

#if __has_include(<nccl.h>) && __has_include(<cuda_runtime_api.h>)
#define HAVE_REAL_HEADERS 1

#include <cuda_runtime_api.h>
#include <nccl.h>

/* Map gpulib's opaque names onto the real types: a mismatch in any
 * prototype then fails to compile below. */
#define PF_GPULIB_REAL_TYPES 1
typedef cudaError_t pf_cuda_error_t;
typedef enum cudaMemcpyKind pf_cuda_memcpy_kind_t;
typedef cudaStream_t pf_cuda_stream_t;
typedef cudaEvent_t pf_cuda_event_t;
typedef struct cudaDeviceProp pf_cuda_device_prop;
typedef ncclResult_t pf_nccl_result_t;
typedef ncclDataType_t pf_nccl_datatype_t;
typedef ncclRedOp_t pf_nccl_redop_t;
typedef ncclComm_t pf_nccl_comm_t;
typedef ncclUniqueId pf_nccl_unique_id;
typedef ncclConfig_t pf_nccl_config_arg_t;
#endif

#include "util/gpulib.h"

#ifdef HAVE_REAL_HEADERS

/* Comparing our enum constants with the header's is the point here. */
#pragma GCC diagnostic ignored "-Wenum-compare"

#define SAME_TYPE(real, table, member)                                      \
    _Static_assert(__builtin_types_compatible_p(                            \
                       __typeof__(&real),                                   \
                       __typeof__(((table *)0)->member)),                   \
                   #member " differs from the header's prototype")
#define CUDA_FN(f) SAME_TYPE(f, struct pf_cudart, f)
#define NCCL_FN(f) SAME_TYPE(f, struct pf_nccl, f)

CUDA_FN(cudaGetDeviceCount);
CUDA_FN(cudaSetDevice);
CUDA_FN(cudaGetDeviceProperties);
CUDA_FN(cudaDeviceGetPCIBusId);
CUDA_FN(cudaRuntimeGetVersion);
CUDA_FN(cudaDriverGetVersion);
CUDA_FN(cudaGetErrorString);
CUDA_FN(cudaMalloc);
CUDA_FN(cudaFree);
CUDA_FN(cudaMallocHost);
CUDA_FN(cudaFreeHost);
CUDA_FN(cudaMemcpyAsync);
CUDA_FN(cudaMemsetAsync);
CUDA_FN(cudaStreamCreateWithFlags);
CUDA_FN(cudaStreamDestroy);
CUDA_FN(cudaStreamQuery);
CUDA_FN(cudaEventCreateWithFlags);
CUDA_FN(cudaEventDestroy);
CUDA_FN(cudaEventRecord);
CUDA_FN(cudaEventQuery);
CUDA_FN(cudaEventElapsedTime);

NCCL_FN(ncclGetVersion);
NCCL_FN(ncclGetUniqueId);
NCCL_FN(ncclCommInitRankConfig);
NCCL_FN(ncclCommSplit);
NCCL_FN(ncclCommDestroy);
NCCL_FN(ncclCommAbort);
NCCL_FN(ncclCommGetAsyncError);
NCCL_FN(ncclGetErrorString);
NCCL_FN(ncclGetLastError);
NCCL_FN(ncclAllReduce);
NCCL_FN(ncclGroupStart);
NCCL_FN(ncclGroupEnd);

/* Passing enums as int is only sound while they are int-sized. */
_Static_assert(sizeof(cudaError_t) == sizeof(int), "cudaError_t size");
_Static_assert(sizeof(ncclResult_t) == sizeof(int), "ncclResult_t size");
_Static_assert(sizeof(ncclDataType_t) == sizeof(int), "ncclDataType_t size");
_Static_assert(sizeof(ncclRedOp_t) == sizeof(int), "ncclRedOp_t size");
_Static_assert(sizeof(enum cudaMemcpyKind) == sizeof(int), "memcpy kind");

_Static_assert(PF_CUDA_SUCCESS == cudaSuccess, "cudaSuccess");
_Static_assert(PF_CUDA_ERROR_NO_DEVICE == cudaErrorNoDevice, "NoDevice");
_Static_assert(PF_CUDA_ERROR_NOT_READY == cudaErrorNotReady, "NotReady");
_Static_assert(PF_CUDA_MEMCPY_HOST_TO_DEVICE == cudaMemcpyHostToDevice, "H2D");
_Static_assert(PF_CUDA_MEMCPY_DEVICE_TO_HOST == cudaMemcpyDeviceToHost, "D2H");
_Static_assert(PF_CUDA_MEMCPY_DEVICE_TO_DEVICE == cudaMemcpyDeviceToDevice,
               "D2D");
_Static_assert(PF_CUDA_STREAM_NON_BLOCKING == cudaStreamNonBlocking,
               "cudaStreamNonBlocking");
_Static_assert(PF_CUDA_EVENT_DEFAULT == cudaEventDefault, "cudaEventDefault");
_Static_assert(PF_CUDA_PROP_NAME_OFF == offsetof(struct cudaDeviceProp, name),
               "cudaDeviceProp.name offset");
_Static_assert(PF_CUDA_PROP_NAME_LEN ==
                   sizeof(((struct cudaDeviceProp *)0)->name),
               "cudaDeviceProp.name length");
_Static_assert(PF_CUDA_PROP_TOTALMEM_OFF ==
                   offsetof(struct cudaDeviceProp, totalGlobalMem),
               "cudaDeviceProp.totalGlobalMem offset");
_Static_assert(sizeof(struct cudaDeviceProp) <= PF_CUDA_PROP_BUF,
               "cudaDeviceProp fits the buffer");

_Static_assert(PF_NCCL_UNIQUE_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "id bytes");
_Static_assert(PF_NCCL_SUCCESS == ncclSuccess, "ncclSuccess");
_Static_assert(PF_NCCL_UNHANDLED_CUDA_ERROR == ncclUnhandledCudaError, "cuda");
_Static_assert(PF_NCCL_SYSTEM_ERROR == ncclSystemError, "system");
_Static_assert(PF_NCCL_INTERNAL_ERROR == ncclInternalError, "internal");
_Static_assert(PF_NCCL_INVALID_ARGUMENT == ncclInvalidArgument, "arg");
_Static_assert(PF_NCCL_INVALID_USAGE == ncclInvalidUsage, "usage");
_Static_assert(PF_NCCL_REMOTE_ERROR == ncclRemoteError, "remote");
_Static_assert(PF_NCCL_IN_PROGRESS == ncclInProgress, "in progress");
_Static_assert(PF_NCCL_FLOAT32 == ncclFloat32, "ncclFloat32");
_Static_assert(PF_NCCL_SUM == ncclSum, "ncclSum");
_Static_assert(PF_NCCL_CONFIG_UNDEF_INT == NCCL_CONFIG_UNDEF_INT, "undef");

/* Our 2.18 layout must be a prefix of the header's ncclConfig_t. */
#define CFG_OFF(f)                                                          \
    _Static_assert(offsetof(pf_nccl_config_t, f) == offsetof(ncclConfig_t, f), \
                   "ncclConfig_t." #f " offset")
CFG_OFF(size);
CFG_OFF(magic);
CFG_OFF(version);
CFG_OFF(blocking);
CFG_OFF(cgaClusterSize);
CFG_OFF(minCTAs);
CFG_OFF(maxCTAs);
CFG_OFF(netName);
CFG_OFF(splitShare);
_Static_assert(sizeof(pf_nccl_config_t) <= sizeof(ncclConfig_t),
               "config prefix");

Test(gpulib_decls, layout_matches_headers)
{
    ncclConfig_t real = NCCL_CONFIG_INITIALIZER;
    pf_nccl_config_t ours;

    pf_nccl_config_init(&ours);
    cr_assert_eq(ours.magic, real.magic);
    cr_assert_eq(ours.blocking, real.blocking);
    cr_assert_eq(ours.splitShare, real.splitShare);
    cr_assert_eq(ours.size, sizeof(pf_nccl_config_t));
    cr_assert_eq(ours.version, 21800u);
    cr_assert_eq((size_t)PF_CUDA_PROP_TOTALMEM_OFF,
                 offsetof(struct cudaDeviceProp, totalGlobalMem));
}

#else

Test(gpulib_decls, layout_matches_headers)
{
    cr_skip_test("CUDA/NCCL headers not found (/usr/local/cuda/include)");
}

#endif
