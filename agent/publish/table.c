/* The human output: one line per check (remedy under each non-pass), the
 * nccl-tests style all_reduce table when a collective ran, and a summary.
 * The all_reduce table lives only here, so every engine prints the same
 * columns as nccl-tests:
 *   size count type redop root | time algbw busbw #wrong (out-of-place,
 *   then in-place), then "# Out of bounds values" and "# Avg bus bandwidth". */
#include "publish.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../config/config.h"
#include "../probe/hw_counters.h"
#include "../util/sanitize.h"
#include "../util/version.h"

static const char *status_tag(enum pf_status s)
{
    switch (s) {
    case PF_PASS: return "PASS";
    case PF_WARN: return "WARN";
    case PF_FAIL: return "FAIL";
    case PF_SKIP: return "SKIP";
    }
    return "?";
}

static void print_header(const struct pf_run *run, FILE *out)
{
    const struct pf_node *n = &run->node;

    fprintf(out, "efa-preflight %s %s on %s: %s (%s), %d EFA, %d GPU, "
            "libfabric %s\n",
            PF_VERSION, pf_command_name(run->cfg.command),
            n->hostname[0] ? n->hostname : "?",
            n->instance_type[0] ? n->instance_type : "unknown type",
            n->instance_source[0] ? n->instance_source : "none",
            n->efa_count, n->gpu_count,
            n->libfabric_loaded ? n->libfabric_version : "not loaded");
}

static void print_checks(const struct pf_verdict *v, FILE *out)
{
    fprintf(out, "\n%-6s %-18s %-24s %s\n", "STATUS", "CHECK", "REASON",
            "MESSAGE");
    for (int i = 0; i < v->n; i++) {
        const struct pf_check *c = &v->checks[i];
        fprintf(out, "%-6s %-18s %-24s %s\n", status_tag(c->status), c->name,
                pf_reason_name(c->reason), c->message);
        if ((c->status == PF_WARN || c->status == PF_FAIL) && c->remedy[0])
            fprintf(out, "%-6s %-18s remedy: %s\n", "", "", c->remedy);
    }
}

static void print_fault(const struct pf_fault *f, FILE *out)
{
    if (f->err != PF_OK)
        fprintf(out, "# collective failed: %s: %s\n",
                f->reason != PF_R_None ? pf_reason_name(f->reason)
                                       : pf_err_name(f->err), f->msg);
}

static void print_coll(const struct pf_coll *c, const struct pf_fault *f,
                       FILE *out)
{
    const struct pf_fabric_facts *fab = &c->fabric;

    /* Nothing measured (the peers never came, the engine never opened):
     * no empty table, no "0 OK" for data never checked, no "provider ?". */
    if (c->nrows == 0) {
        fprintf(out, "\n# all_reduce: no message size measured");
        if (c->engine[0])
            fprintf(out, ", engine %s", c->engine);
        if (fab->provider[0])
            fprintf(out, ", provider %s", fab->provider);
        fprintf(out, "\n");
        print_fault(f, out);
        return;
    }
    fprintf(out, "\n# all_reduce: engine %s, provider %s%s, %d ranks on %d "
            "node%s%s%s\n",
            c->engine[0] ? c->engine : "?",
            fab->provider[0] ? fab->provider : "?",
            fab->provider_is_fallback ? " (fallback: EFA not used)" : "",
            c->nranks, c->nnodes, c->nnodes == 1 ? "" : "s",
            fab->transport[0] ? ", transport " : "", fab->transport);
    /* centred over the two 33-column blocks that follow the 50 of
     * size..root */
    fprintf(out, "#%59s%s%23s%s\n", "", "out-of-place", "", "in-place");
    fprintf(out, "#%11s %13s %9s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n",
            "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
            "#wrong", "time", "algbw", "busbw", "#wrong");
    fprintf(out, "#%11s %13s %9s %6s %6s %9s %7s %7s %6s %9s %7s %7s\n",
            "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
            "(us)", "(GB/s)", "(GB/s)");
    for (int i = 0; i < c->nrows && i < PF_MAX_ROWS; i++) {
        const struct pf_row *r = &c->rows[i];
        fprintf(out, " %11llu %13llu %9s %6s %6d %9.2f %7.2f %7.2f %6ld "
                "%9.2f %7.2f %7.2f %6ld\n",
                (unsigned long long)r->bytes, (unsigned long long)r->count,
                "float", "sum", -1, r->oop_us, r->oop_algbw, r->oop_busbw,
                r->oop_wrong, r->ip_us, r->ip_algbw, r->ip_busbw, r->ip_wrong);
    }
    fprintf(out, "# Out of bounds values : %ld %s\n", c->wrong_total,
            c->wrong_total == 0 ? "OK" : "FAILED");
    fprintf(out, "# Avg bus bandwidth : %g\n", c->avg_busbw);
    print_fault(f, out);
}

/* The per-NIC block: each EFA device's bytes over the sweep, its share of
 * the node's traffic and the error counters that moved in any window;
 * then the host engine's rails when it striped over several NICs. */
static void print_nics(const struct pf_run *run, FILE *out)
{
    const struct pf_nics *s = &run->coll.nics;
    uint64_t bytes[PF_MAX_EFA] = { 0 }, total = 0;
    char txt[32], errs[256];

    if (s->nwin > 0) {
        for (int i = 0; i < s->n; i++) {
            bool known;
            bytes[i] = pf_hwc_bytes(s->win[0].nic[i].d,
                                    s->win[0].nic[i].present, &known);
            total += bytes[i];
        }
        pf_hwc_fmt_bytes(txt, sizeof(txt), (double)total);
        fprintf(out, "\n# NICs: %d EFA, hardware counters over the %s: %s "
                "moved%s%s\n", s->n, s->win[0].stage, txt,
                s->note[0] ? "; " : "", s->note);
        fprintf(out, "#%-15s %12s %7s  %s\n", "device", "bytes", "share",
                "errors moved");
        for (int i = 0; i < s->n; i++) {
            uint64_t sum[PF_HWC_COUNT] = { 0 };
            uint32_t present = ~0u;
            for (int w = 0; w < s->nwin; w++) {
                present &= s->win[w].nic[i].present;
                for (int c = 0; c < PF_HWC_COUNT; c++)
                    sum[c] += s->win[w].nic[i].d[c];
            }
            pf_hwc_errors_text(sum, present, "+", errs, sizeof(errs));
            pf_hwc_fmt_bytes(txt, sizeof(txt), (double)bytes[i]);
            fprintf(out, " %-15s %12s %6.1f%%  %s\n", run->node.efa[i].name,
                    txt, total ? 100.0 * (double)bytes[i] / (double)total : 0,
                    errs[0] ? errs : "-");
        }
    } else if (s->note[0]) {
        fprintf(out, "\n# NICs: %s\n", s->note);
    }
    if (s->nrails < 2)
        return;
    fprintf(out, "\n# rails: the host engine striped over %d NICs%s%s\n",
            s->nrails, s->rail_note[0] ? ": " : "", s->rail_note);
    fprintf(out, "#%-23s %12s %9s %8s  %s\n", "nic", "bytes", "seconds",
            "GB/s", "");
    for (int r = 0; r < s->nrails; r++) {
        const struct pf_rail *rl = &s->rails[r];
        pf_hwc_fmt_bytes(txt, sizeof(txt), (double)rl->bytes);
        fprintf(out, " %-23s %12s %9.3f %8.3f  %s\n", rl->nic, txt,
                rl->seconds, rl->gbps, rl->slow ? "slow" : "");
    }
}

static void print_summary(const struct pf_run *run,
                          const struct pf_verdict *v, FILE *out)
{
    int count[4] = { 0, 0, 0, 0 };
    const char *headline = v->cls == PF_CLASS_OK ? ""
                                                 : pf_reason_name(v->headline);
    const char *word = pf_class_status_word(v->cls);
    char tag[16];
    size_t k;

    /* The class's one status word, as on the Node and in the report. */
    for (k = 0; word[k] && k + 1 < sizeof(tag); k++)
        tag[k] = (char)toupper((unsigned char)word[k]);
    tag[k] = '\0';
    for (int i = 0; i < v->n; i++)
        count[v->checks[i].status]++;
    fprintf(out, "\nsummary: %s%s%s - %d passed, %d warnings, %d failed, %d "
            "skipped (exit %d)\n",
            tag, headline[0] ? " " : "", headline,
            count[PF_PASS], count[PF_WARN], count[PF_FAIL], count[PF_SKIP],
            v->exit_code);
    if (run->cfg.fabric_provider[0] &&
        strncmp(run->cfg.fabric_provider, "efa", 3))
        fprintf(out, "note: provider %s is a fallback: EFA was not tested\n",
                run->cfg.fabric_provider);
}

static void write_table(const struct pf_run *run, const struct pf_verdict *v,
                        FILE *out)
{
    print_header(run, out);
    print_checks(v, out);
    const struct pf_fault *f = run->peers.fault.err != PF_OK ? &run->peers.fault
                                                             : &run->coll.fault;

    if (run->coll.ran || f->err != PF_OK) {
        print_coll(&run->coll, f, out);
        print_nics(run, out);
    }
    print_summary(run, v, out);
}

/* Written to memory first, then sanitised as a whole: whatever a hostname
 * or a message carried, the table is printable UTF-8 lines. */
void pf_publish_table(const struct pf_run *run, FILE *out)
{
    pf_publish_table_of(run, &run->verdict, out);
}

void pf_publish_table_of(const struct pf_run *run, const struct pf_verdict *v,
                         FILE *out)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);

    if (!mem) {
        write_table(run, v, out);
        return;
    }
    write_table(run, v, mem);
    if (fclose(mem) == 0 && text) {
        pf_sanitize_text(text, len + 1, text);
        fputs(text, out);
    }
    free(text);
}
