/* pf_publish: the one place that decides what goes where.
 *   stdout   the table (table.c), or the JSON report with cfg.json;
 *   file     the JSON report, written atomically, with cfg.report_file;
 *   Node     labels, conditions, Event, taint (node.c) in k8s mode with
 *            cfg.publish.
 * Under `local` only rank 0 speaks: the other ranks' results reach it
 * through the collective, and N copies of the table would be noise. */
#include "publish.h"

#include <stdlib.h>
#include <string.h>

#include "../util/fsutil.h"

pf_err pf_publish(struct pf_run *run, char *err)
{
    const struct pf_config *cfg = &run->cfg;
    char *json = NULL;
    pf_err rc = PF_OK;

    if (cfg->command == PF_CMD_LOCAL && run->peers.rank != 0)
        return PF_OK;

    if (cfg->json || cfg->report_file[0]) {
        json = pf_report_json(run);
        if (!json)
            return pf_fail(err, PF_ERR_NOMEM, "JSON report: out of memory");
    }
    if (cfg->json) {
        fputs(json, stdout);
        fputc('\n', stdout);
    } else {
        pf_publish_table(run, stdout);
    }
    fflush(stdout);

    if (cfg->report_file[0]) {
        rc = pf_write_file_atomic(cfg->report_file, json, strlen(json), err);
        if (rc != PF_OK)
            pf_err_prefix(err, "report");
    }
    free(json);
    if (rc != PF_OK)
        return rc;

    /* bootstrap "auto" resolves to k8s in a pod: discover records it */
    if (cfg->publish && (!strcmp(cfg->bootstrap, "k8s") ||
                         !strcmp(run->peers.bootstrap, "k8s")))
        return pf_publish_node(run, err);
    return PF_OK;
}
