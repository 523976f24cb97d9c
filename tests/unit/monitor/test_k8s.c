/* Who holds EFA devices on a node: the rule re-validation waits on. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "monitor/monitor.h"

static bool holds(const char *json)
{
    cJSON *pod = cJSON_Parse(json);
    bool r;

    cr_assert(pod, "bad JSON in the test: %s", json);
    r = pf_mon_pod_holds_efa(pod);
    cJSON_Delete(pod);
    return r;
}

Test(monitor_k8s, a_running_pod_requesting_efa_holds_devices)
{
    cr_assert(holds("{\"status\":{\"phase\":\"Running\"},\"spec\":{\"containers\":"
                    "[{\"resources\":{\"requests\":{\"vpc.amazonaws.com/efa\":\"32\"}}}]}}"));
    /* a limit alone is a request for extended resources */
    cr_assert(holds("{\"status\":{\"phase\":\"Pending\"},\"spec\":{\"containers\":"
                    "[{\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"4\"}}}]}}"));
    /* an init container (the gate) holds them too */
    cr_assert(holds("{\"spec\":{\"containers\":[{}],\"initContainers\":"
                    "[{\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"1\"}}}]}}"));
}

Test(monitor_k8s, finished_pods_and_pods_without_efa_hold_nothing)
{
    cr_assert(!holds("{\"status\":{\"phase\":\"Succeeded\"},\"spec\":{\"containers\":"
                     "[{\"resources\":{\"requests\":{\"vpc.amazonaws.com/efa\":\"32\"}}}]}}"));
    cr_assert(!holds("{\"status\":{\"phase\":\"Failed\"},\"spec\":{\"containers\":"
                     "[{\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"32\"}}}]}}"));
    cr_assert(!holds("{\"status\":{\"phase\":\"Running\"},\"spec\":{\"containers\":"
                     "[{\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}"));
    cr_assert(!holds("{\"status\":{\"phase\":\"Running\"},\"spec\":{\"containers\":"
                     "[{\"resources\":{\"limits\":{\"vpc.amazonaws.com/efa\":\"0\"}}}]}}"));
    cr_assert(!holds("{}"));
}
