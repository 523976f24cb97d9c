/* nvmllib's hand-written NVML declarations against the real nvml.h.
 *
 * mk/nvml_double.mk compiles this file with -isystem $(NVML_INCLUDE)
 * (default /usr/local/cuda/include) when nvml.h is there; then every check
 * below is a compile-time assertion (enum values, struct layouts, and each
 * function pointer in struct pf_nvml against the real prototype). Without
 * the header it skips. */
#include <criterion/criterion.h>
#include <stddef.h>

#if __has_include(<nvml.h>)
#define HAVE_NVML_H 1

#include <nvml.h>

#define PF_NVMLLIB_REAL_TYPES 1
typedef nvmlReturn_t pf_nvml_return_t;
typedef nvmlEnableState_t pf_nvml_enable_t;
typedef nvmlMemoryErrorType_t pf_nvml_mem_err_t;
typedef nvmlEccCounterType_t pf_nvml_ecc_counter_t;
typedef nvmlPageRetirementCause_t pf_nvml_retire_cause_t;
typedef nvmlNvLinkErrorCounter_t pf_nvml_nvlink_counter_t;
typedef nvmlDevice_t pf_nvml_device_t;
typedef nvmlEventSet_t pf_nvml_event_set_t;
typedef nvmlPciInfo_t pf_nvml_pci_arg_t;
typedef nvmlEventData_t pf_nvml_event_arg_t;
#endif

#include "util/nvmllib.h"

#ifdef HAVE_NVML_H

#pragma GCC diagnostic ignored "-Wenum-compare"

#define FN(f)                                                               \
    _Static_assert(__builtin_types_compatible_p(                            \
                       __typeof__(&f),                                      \
                       __typeof__(((struct pf_nvml *)0)->f)),               \
                   #f " differs from nvml.h's prototype")

FN(nvmlInit_v2);
FN(nvmlShutdown);
FN(nvmlErrorString);
FN(nvmlDeviceGetCount_v2);
FN(nvmlDeviceGetHandleByIndex_v2);
FN(nvmlSystemGetDriverVersion);
FN(nvmlSystemGetCudaDriverVersion_v2);
FN(nvmlDeviceGetPciInfo_v3);
FN(nvmlDeviceGetUUID);
FN(nvmlDeviceGetSerial);
FN(nvmlDeviceGetName);
FN(nvmlDeviceGetEccMode);
FN(nvmlDeviceGetTotalEccErrors);
FN(nvmlDeviceGetRetiredPages_v2);
FN(nvmlDeviceGetRetiredPagesPendingStatus);
FN(nvmlDeviceGetRemappedRows);
FN(nvmlDeviceGetNvLinkState);
FN(nvmlDeviceGetNvLinkErrorCounter);
FN(nvmlDeviceGetCurrPcieLinkGeneration);
FN(nvmlDeviceGetCurrPcieLinkWidth);
FN(nvmlDeviceGetMaxPcieLinkGeneration);
FN(nvmlDeviceGetMaxPcieLinkWidth);
FN(nvmlDeviceGetPcieReplayCounter);
FN(nvmlDeviceGetCurrentClocksEventReasons);
FN(nvmlDeviceGetPersistenceMode);
FN(nvmlDeviceGetMigMode);
FN(nvmlEventSetCreate);
FN(nvmlDeviceRegisterEvents);
FN(nvmlEventSetWait_v2);
FN(nvmlEventSetFree);

/* Enums passed as int must be int-sized. */
_Static_assert(sizeof(nvmlReturn_t) == sizeof(int), "nvmlReturn_t size");
_Static_assert(sizeof(nvmlEnableState_t) == sizeof(int), "enable size");
_Static_assert(sizeof(nvmlNvLinkErrorCounter_t) == sizeof(int), "counter");

_Static_assert(PF_NVML_SUCCESS == NVML_SUCCESS, "SUCCESS");
_Static_assert(PF_NVML_ERROR_UNINITIALIZED == NVML_ERROR_UNINITIALIZED, "");
_Static_assert(PF_NVML_ERROR_INVALID_ARGUMENT == NVML_ERROR_INVALID_ARGUMENT,
               "INVALID_ARGUMENT");
_Static_assert(PF_NVML_ERROR_NOT_SUPPORTED == NVML_ERROR_NOT_SUPPORTED, "");
_Static_assert(PF_NVML_ERROR_NO_PERMISSION == NVML_ERROR_NO_PERMISSION, "");
_Static_assert(PF_NVML_ERROR_INSUFFICIENT_SIZE == NVML_ERROR_INSUFFICIENT_SIZE,
               "INSUFFICIENT_SIZE");
_Static_assert(PF_NVML_ERROR_DRIVER_NOT_LOADED == NVML_ERROR_DRIVER_NOT_LOADED,
               "DRIVER_NOT_LOADED");
_Static_assert(PF_NVML_ERROR_TIMEOUT == NVML_ERROR_TIMEOUT, "TIMEOUT");
_Static_assert(PF_NVML_ERROR_GPU_IS_LOST == NVML_ERROR_GPU_IS_LOST, "LOST");
_Static_assert(PF_NVML_ERROR_UNKNOWN == NVML_ERROR_UNKNOWN, "UNKNOWN");
_Static_assert(PF_NVML_FEATURE_ENABLED == NVML_FEATURE_ENABLED, "ENABLED");
_Static_assert(PF_NVML_FEATURE_DISABLED == NVML_FEATURE_DISABLED, "DISABLED");
_Static_assert(PF_NVML_MEMORY_ERROR_TYPE_UNCORRECTED ==
                   NVML_MEMORY_ERROR_TYPE_UNCORRECTED, "UNCORRECTED");
_Static_assert(PF_NVML_VOLATILE_ECC == NVML_VOLATILE_ECC, "VOLATILE");
_Static_assert(PF_NVML_AGGREGATE_ECC == NVML_AGGREGATE_ECC, "AGGREGATE");
_Static_assert(PF_NVML_RETIRE_MULTIPLE_SBE ==
                   NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
               "SBE cause");
_Static_assert(PF_NVML_RETIRE_DBE ==
                   NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, "DBE");
_Static_assert(PF_NVML_NVLINK_ERROR_DL_REPLAY == NVML_NVLINK_ERROR_DL_REPLAY,
               "REPLAY");
_Static_assert(PF_NVML_NVLINK_ERROR_DL_RECOVERY ==
                   NVML_NVLINK_ERROR_DL_RECOVERY, "RECOVERY");
_Static_assert(PF_NVML_NVLINK_ERROR_DL_CRC_FLIT ==
                   NVML_NVLINK_ERROR_DL_CRC_FLIT, "CRC_FLIT");
_Static_assert(PF_NVML_NVLINK_ERROR_DL_CRC_DATA ==
                   NVML_NVLINK_ERROR_DL_CRC_DATA, "CRC_DATA");
_Static_assert(PF_NVML_DEVICE_MIG_ENABLE == NVML_DEVICE_MIG_ENABLE, "MIG");
_Static_assert(PF_NVML_EVENT_XID ==
                   (unsigned long long)nvmlEventTypeXidCriticalError, "XID");
_Static_assert(PF_NVML_CLOCKS_HW_SLOWDOWN ==
                   (unsigned long long)nvmlClocksThrottleReasonHwSlowdown,
               "HW slowdown");
_Static_assert(PF_NVML_CLOCKS_HW_THERMAL ==
                   (unsigned long long)nvmlClocksThrottleReasonHwThermalSlowdown,
               "HW thermal");
_Static_assert(PF_NVML_CLOCKS_HW_POWER_BRAKE ==
                   (unsigned long long)
                       nvmlClocksThrottleReasonHwPowerBrakeSlowdown,
               "power brake");
_Static_assert(PF_NVML_UUID_LEN == NVML_DEVICE_UUID_V2_BUFFER_SIZE, "uuid");
_Static_assert(PF_NVML_SERIAL_LEN == NVML_DEVICE_SERIAL_BUFFER_SIZE, "serial");
_Static_assert(PF_NVML_NAME_LEN == NVML_DEVICE_NAME_V2_BUFFER_SIZE, "name");
_Static_assert(PF_NVML_DRIVER_LEN == NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE,
               "driver");
_Static_assert(PF_NVML_BUS_ID_LEN == NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, "bus");
_Static_assert(PF_NVML_BUS_ID_LEGACY_LEN ==
                   NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE, "legacy bus");

#define SAME_OFF(ours, real, f)                                             \
    _Static_assert(offsetof(ours, f) == offsetof(real, f), #real "." #f)
SAME_OFF(pf_nvml_pci_info_t, nvmlPciInfo_t, busIdLegacy);
SAME_OFF(pf_nvml_pci_info_t, nvmlPciInfo_t, domain);
SAME_OFF(pf_nvml_pci_info_t, nvmlPciInfo_t, bus);
SAME_OFF(pf_nvml_pci_info_t, nvmlPciInfo_t, device);
SAME_OFF(pf_nvml_pci_info_t, nvmlPciInfo_t, pciDeviceId);
SAME_OFF(pf_nvml_pci_info_t, nvmlPciInfo_t, pciSubSystemId);
SAME_OFF(pf_nvml_pci_info_t, nvmlPciInfo_t, busId);
_Static_assert(sizeof(pf_nvml_pci_info_t) == sizeof(nvmlPciInfo_t), "pci");
SAME_OFF(pf_nvml_event_data_t, nvmlEventData_t, device);
SAME_OFF(pf_nvml_event_data_t, nvmlEventData_t, eventType);
SAME_OFF(pf_nvml_event_data_t, nvmlEventData_t, eventData);
SAME_OFF(pf_nvml_event_data_t, nvmlEventData_t, gpuInstanceId);
SAME_OFF(pf_nvml_event_data_t, nvmlEventData_t, computeInstanceId);
_Static_assert(sizeof(pf_nvml_event_data_t) == sizeof(nvmlEventData_t),
               "event data");

Test(nvmllib_decls, layout_matches_nvml_h)
{
    cr_assert_eq(sizeof(pf_nvml_pci_info_t), sizeof(nvmlPciInfo_t));
    cr_assert_eq(offsetof(pf_nvml_event_data_t, eventData),
                 offsetof(nvmlEventData_t, eventData));
    cr_assert_eq(PF_NVML_EVENT_XID,
                 (unsigned long long)nvmlEventTypeXidCriticalError);
}

#else

Test(nvmllib_decls, layout_matches_nvml_h)
{
    cr_skip_test("nvml.h not found (NVML_INCLUDE, /usr/local/cuda/include)");
}

#endif
