/* nvmllib: NVML (libnvidia-ml.so.1, mounted with the driver), loaded with
 * dlopen, as gpulib loads CUDA and NCCL.
 *
 * The build needs no NVML header: the few types, constants and entry
 * points the GPU health probe uses are declared here under pf_ names.
 * tests/unit/util/test_nvmllib_decls.c compares them with the real nvml.h
 * (values, struct offsets, every prototype) wherever
 * /usr/local/cuda/include/nvml.h exists (mk/nvml_double.mk).
 *
 * Library search: $EFA_PREFLIGHT_NVML (the only candidate when set: a test
 * double must not fall back to a real library), else libnvidia-ml.so.1.
 * A missing library or required symbol is PF_ERR_UNSUPPORTED with what was
 * tried; optional entry points (per-field reads a driver may lack) are
 * NULL and read as "not supported". */
#ifndef PF_NVMLLIB_H
#define PF_NVMLLIB_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#ifndef PF_NVMLLIB_REAL_TYPES
typedef int pf_nvml_return_t;                        /* nvmlReturn_t */
typedef int pf_nvml_enable_t;                        /* nvmlEnableState_t */
typedef int pf_nvml_mem_err_t;                       /* nvmlMemoryErrorType_t */
typedef int pf_nvml_ecc_counter_t;                   /* nvmlEccCounterType_t */
typedef int pf_nvml_retire_cause_t;                  /* nvmlPageRetirementCause_t */
typedef int pf_nvml_nvlink_counter_t;                /* nvmlNvLinkErrorCounter_t */
typedef struct pf_nvml_device_s *pf_nvml_device_t;   /* nvmlDevice_t */
typedef struct pf_nvml_event_set_s *pf_nvml_event_set_t; /* nvmlEventSet_t */
#endif

enum {                                               /* nvmlReturn_t */
    PF_NVML_SUCCESS = 0,
    PF_NVML_ERROR_UNINITIALIZED = 1,
    PF_NVML_ERROR_INVALID_ARGUMENT = 2,
    PF_NVML_ERROR_NOT_SUPPORTED = 3,
    PF_NVML_ERROR_NO_PERMISSION = 4,
    PF_NVML_ERROR_INSUFFICIENT_SIZE = 7,
    PF_NVML_ERROR_DRIVER_NOT_LOADED = 9,
    PF_NVML_ERROR_TIMEOUT = 10,
    PF_NVML_ERROR_GPU_IS_LOST = 15,
    PF_NVML_ERROR_UNKNOWN = 999,
};

enum { PF_NVML_FEATURE_DISABLED = 0, PF_NVML_FEATURE_ENABLED = 1 };
enum { PF_NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { PF_NVML_VOLATILE_ECC = 0, PF_NVML_AGGREGATE_ECC = 1 };
enum {                                               /* nvmlPageRetirementCause_t */
    PF_NVML_RETIRE_MULTIPLE_SBE = 0,
    PF_NVML_RETIRE_DBE = 1,
};
enum {                                               /* nvmlNvLinkErrorCounter_t */
    PF_NVML_NVLINK_ERROR_DL_REPLAY = 0,
    PF_NVML_NVLINK_ERROR_DL_RECOVERY = 1,
    PF_NVML_NVLINK_ERROR_DL_CRC_FLIT = 2,
    PF_NVML_NVLINK_ERROR_DL_CRC_DATA = 3,
};
#define PF_NVML_DEVICE_MIG_ENABLE 1                  /* NVML_DEVICE_MIG_ENABLE */

#define PF_NVML_EVENT_XID 0x8ull              /* nvmlEventTypeXidCriticalError */
/* nvmlClocksEventReason* (formerly ...ThrottleReason*) bits */
#define PF_NVML_CLOCKS_HW_SLOWDOWN 0x8ull
#define PF_NVML_CLOCKS_HW_THERMAL 0x40ull
#define PF_NVML_CLOCKS_HW_POWER_BRAKE 0x80ull

/* Buffer sizes from nvml.h */
#define PF_NVML_UUID_LEN 96               /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define PF_NVML_SERIAL_LEN 30             /* NVML_DEVICE_SERIAL_BUFFER_SIZE */
#define PF_NVML_NAME_LEN 96               /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define PF_NVML_DRIVER_LEN 80       /* NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE */
#define PF_NVML_BUS_ID_LEN 32             /* NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE */
#define PF_NVML_BUS_ID_LEGACY_LEN 16   /* NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE */

/* nvmlPciInfo_t (the _v3 call's layout) */
typedef struct {
    char busIdLegacy[PF_NVML_BUS_ID_LEGACY_LEN];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[PF_NVML_BUS_ID_LEN];
} pf_nvml_pci_info_t;

/* nvmlEventData_t */
typedef struct {
    pf_nvml_device_t device;
    unsigned long long eventType;
    unsigned long long eventData;     /* the XID for an XID event */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} pf_nvml_event_data_t;

#ifndef PF_NVMLLIB_REAL_TYPES
typedef pf_nvml_pci_info_t pf_nvml_pci_arg_t;       /* nvmlPciInfo_t */
typedef pf_nvml_event_data_t pf_nvml_event_arg_t;   /* nvmlEventData_t */
#endif

struct pf_nvml {
    void *dl;
    char path[1024];
    /* required: without these no GPU can be named */
    pf_nvml_return_t (*nvmlInit_v2)(void);
    pf_nvml_return_t (*nvmlShutdown)(void);
    const char *(*nvmlErrorString)(pf_nvml_return_t result);
    pf_nvml_return_t (*nvmlDeviceGetCount_v2)(unsigned int *deviceCount);
    pf_nvml_return_t (*nvmlDeviceGetHandleByIndex_v2)(unsigned int index,
                                                      pf_nvml_device_t *device);
    /* optional: NULL reads as "not supported by this driver" */
    pf_nvml_return_t (*nvmlSystemGetDriverVersion)(char *version,
                                                   unsigned int length);
    pf_nvml_return_t (*nvmlSystemGetCudaDriverVersion_v2)(int *version);
    pf_nvml_return_t (*nvmlDeviceGetPciInfo_v3)(pf_nvml_device_t device,
                                                pf_nvml_pci_arg_t *pci);
    pf_nvml_return_t (*nvmlDeviceGetUUID)(pf_nvml_device_t device, char *uuid,
                                          unsigned int length);
    pf_nvml_return_t (*nvmlDeviceGetSerial)(pf_nvml_device_t device,
                                            char *serial, unsigned int length);
    pf_nvml_return_t (*nvmlDeviceGetName)(pf_nvml_device_t device, char *name,
                                          unsigned int length);
    pf_nvml_return_t (*nvmlDeviceGetEccMode)(pf_nvml_device_t device,
                                             pf_nvml_enable_t *current,
                                             pf_nvml_enable_t *pending);
    pf_nvml_return_t (*nvmlDeviceGetTotalEccErrors)(
        pf_nvml_device_t device, pf_nvml_mem_err_t errorType,
        pf_nvml_ecc_counter_t counterType, unsigned long long *eccCounts);
    pf_nvml_return_t (*nvmlDeviceGetRetiredPages_v2)(
        pf_nvml_device_t device, pf_nvml_retire_cause_t cause,
        unsigned int *pageCount, unsigned long long *addresses,
        unsigned long long *timestamps);
    pf_nvml_return_t (*nvmlDeviceGetRetiredPagesPendingStatus)(
        pf_nvml_device_t device, pf_nvml_enable_t *isPending);
    pf_nvml_return_t (*nvmlDeviceGetRemappedRows)(pf_nvml_device_t device,
                                                  unsigned int *corrRows,
                                                  unsigned int *uncRows,
                                                  unsigned int *isPending,
                                                  unsigned int *failureOccurred);
    pf_nvml_return_t (*nvmlDeviceGetNvLinkState)(pf_nvml_device_t device,
                                                 unsigned int link,
                                                 pf_nvml_enable_t *isActive);
    pf_nvml_return_t (*nvmlDeviceGetNvLinkErrorCounter)(
        pf_nvml_device_t device, unsigned int link,
        pf_nvml_nvlink_counter_t counter, unsigned long long *counterValue);
    pf_nvml_return_t (*nvmlDeviceGetCurrPcieLinkGeneration)(
        pf_nvml_device_t device, unsigned int *gen);
    pf_nvml_return_t (*nvmlDeviceGetCurrPcieLinkWidth)(pf_nvml_device_t device,
                                                       unsigned int *width);
    pf_nvml_return_t (*nvmlDeviceGetMaxPcieLinkGeneration)(
        pf_nvml_device_t device, unsigned int *gen);
    pf_nvml_return_t (*nvmlDeviceGetMaxPcieLinkWidth)(pf_nvml_device_t device,
                                                      unsigned int *width);
    pf_nvml_return_t (*nvmlDeviceGetPcieReplayCounter)(pf_nvml_device_t device,
                                                       unsigned int *value);
    /* nvmlDeviceGetCurrentClocksEventReasons, or on drivers before it the
     * same call under its old name ...ClocksThrottleReasons */
    pf_nvml_return_t (*nvmlDeviceGetCurrentClocksEventReasons)(
        pf_nvml_device_t device, unsigned long long *reasons);
    pf_nvml_return_t (*nvmlDeviceGetPersistenceMode)(pf_nvml_device_t device,
                                                     pf_nvml_enable_t *mode);
    pf_nvml_return_t (*nvmlDeviceGetMigMode)(pf_nvml_device_t device,
                                             unsigned int *currentMode,
                                             unsigned int *pendingMode);
    pf_nvml_return_t (*nvmlEventSetCreate)(pf_nvml_event_set_t *set);
    pf_nvml_return_t (*nvmlDeviceRegisterEvents)(pf_nvml_device_t device,
                                                 unsigned long long eventTypes,
                                                 pf_nvml_event_set_t set);
    pf_nvml_return_t (*nvmlEventSetWait_v2)(pf_nvml_event_set_t set,
                                            pf_nvml_event_arg_t *data,
                                            unsigned int timeoutms);
    pf_nvml_return_t (*nvmlEventSetFree)(pf_nvml_event_set_t set);
};

/* dlopen and resolve; nvmlInit is the caller's (pf_nvml_init). */
pf_err pf_nvml_load(struct pf_nvml *n, char *err);
void pf_nvml_unload(struct pf_nvml *n);
/* nvmlErrorString with a fallback. */
const char *pf_nvml_strerror(const struct pf_nvml *n, pf_nvml_return_t r);
/* The optional entry points this library lacks, comma separated ("" when
 * it has them all): what a driver cannot tell us, named in the report. */
void pf_nvml_missing(const struct pf_nvml *n, char *out, size_t len);

#endif
