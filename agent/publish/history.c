/* History on the node (history.h): writing a run's report and reading the
 * runs back. The file names and the listing are util/histdir.c's. */
#include "history.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/fsutil.h"
#include "../util/json.h"

#define REPORT_MAX (16u << 20)

pf_err pf_history_append(const char *dir, int keep, const char *json,
                         const struct timespec *t, char *err)
{
    char path[PF_HISTORY_NAME + 4096], name[PF_HISTORY_NAME];
    struct timespec at = *t;
    char **names;
    size_t n;
    pf_err rc;

    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return pf_fail(err, PF_ERR_IO, "history directory %s: %s", dir,
                       strerror(errno));
    /* Two runs in one microsecond: the later one takes the next. */
    for (int tries = 0;; tries++) {
        pf_history_name(&at, name);
        if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
            (int)sizeof(path))
            return pf_fail(err, PF_ERR_USAGE, "history directory %s: path "
                           "too long", dir);
        if (access(path, F_OK) != 0 || tries >= 1000)
            break;
        at.tv_nsec += 1000;
        if (at.tv_nsec >= 1000000000L) {
            at.tv_sec++;
            at.tv_nsec -= 1000000000L;
        }
    }
    rc = pf_write_file_atomic(path, json, strlen(json), err);
    if (rc != PF_OK) {
        pf_err_prefix(err, "history");
        return rc;
    }
    rc = pf_history_list(dir, &names, &n, err);
    if (rc != PF_OK)
        return rc;
    for (size_t i = keep > 0 ? (size_t)keep : 1; i < n && rc == PF_OK; i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        if (unlink(path) != 0 && errno != ENOENT)
            rc = pf_fail(err, PF_ERR_IO, "history: removing %s: %s", path,
                         strerror(errno));
    }
    pf_history_names_free(names, n);
    return rc;
}

/* ---------------------------------------------------------------- read */

struct entry {
    char file[PF_HISTORY_NAME];
    char error[160];                  /* "" = read */
    char started[32], status[16], reason[64], cls[24];
    char gpu[16];                     /* GPUHealthy in words, "" = none */
    int exit_code;
    double busbw, floor;              /* GB/s, NaN = none */
    double bytes;                     /* size busbw is judged at, NaN = none */
};

static void copy_str(char *out, size_t cap, const cJSON *root,
                     const char *path)
{
    const char *s = pf_json_str(root, path);
    snprintf(out, cap, "%s", s ? s : "");
}

static double num_at(const cJSON *root, const char *path)
{
    const cJSON *v = pf_json_at(root, path);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void read_entry(const char *dir, const char *name, struct entry *e)
{
    char path[PF_HISTORY_NAME + 4096], msg[PF_ERRLEN];
    const cJSON *rows;
    cJSON *root;
    char *text;

    memset(e, 0, sizeof(*e));
    e->busbw = e->floor = e->bytes = NAN;
    e->exit_code = -1;
    snprintf(e->file, sizeof(e->file), "%s", name);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (pf_read_file(path, REPORT_MAX, &text, NULL, msg) != PF_OK) {
        snprintf(e->error, sizeof(e->error), "%s", msg);
        return;
    }
    root = cJSON_Parse(text);
    free(text);
    if (!root || !cJSON_IsObject(pf_json_at(root, "verdict"))) {
        snprintf(e->error, sizeof(e->error), "not an efa-preflight report");
        cJSON_Delete(root);
        return;
    }
    copy_str(e->started, sizeof(e->started), root, "started_at");
    copy_str(e->status, sizeof(e->status), root, "verdict.status");
    copy_str(e->reason, sizeof(e->reason), root, "verdict.reason");
    copy_str(e->cls, sizeof(e->cls), root, "verdict.class");
    copy_str(e->gpu, sizeof(e->gpu), root, "verdict.conditions.GPUHealthy");
    if (cJSON_IsNumber(pf_json_at(root, "verdict.exit_code")))
        e->exit_code = pf_json_at(root, "verdict.exit_code")->valueint;
    rows = pf_json_at(root, "collective.rows");
    if (cJSON_GetArraySize(rows) > 0) {
        const cJSON *last = cJSON_GetArrayItem(rows, cJSON_GetArraySize(rows) - 1);
        /* The busbw the floor judged, where the report has it. */
        e->busbw = num_at(root, "collective.floor.judged_busbw_gbps");
        e->bytes = num_at(root, "collective.floor.bytes");
        if (isnan(e->busbw)) {
            e->busbw = num_at(root, "collective.peak_busbw_gbps");
            e->bytes = num_at(last, "bytes");
        }
    }
    e->floor = num_at(root, "collective.floor.busbw_gbps");
    cJSON_Delete(root);
}

static void human_bytes(double b, char *out, size_t cap)
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;

    if (isnan(b)) {
        snprintf(out, cap, "-");
        return;
    }
    while (b >= 1024 && fmod(b, 1024) == 0 && u < 4) {
        b /= 1024;
        u++;
    }
    snprintf(out, cap, "%.0f %s", b, units[u]);
}

static void gbps(double v, char *out, size_t cap)
{
    if (isnan(v))
        snprintf(out, cap, "-");
    else
        snprintf(out, cap, "%.2f", v);
}

void pf_history_sparkline(const double *v, int n, bool utf8, char *out,
                          size_t cap)
{
    static const char *const blocks[] = { "\u2581", "\u2582", "\u2583",
                                          "\u2584", "\u2585", "\u2586",
                                          "\u2587", "\u2588" };
    static const char ascii[] = "_.-=+*#@";
    double lo = INFINITY, hi = -INFINITY;
    size_t o = 0;

    if (cap == 0)
        return;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (isnan(v[i]))
            continue;
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
    }
    for (int i = 0; i < n; i++) {
        const char *c;
        char one[2] = "";
        int level;

        if (isnan(v[i])) {
            c = " ";
        } else {
            /* All equal: the middle of the scale. */
            level = hi > lo ? (int)lround((v[i] - lo) / (hi - lo) * 7) : 4;
            if (utf8) {
                c = blocks[level];
            } else {
                one[0] = ascii[level];
                c = one;
            }
        }
        size_t len = strlen(c);
        if (o + len >= cap)
            break;
        memcpy(out + o, c, len);
        o += len;
        out[o] = '\0';
    }
}

/* The numbers in the sparkline's order: the oldest and the newest value,
 * the change between them, and the low and high when a run in between
 * went beyond both ("(0.45 to 0.36 GB/s, down 20%)" for a fall). */
static void print_change(const double *v, size_t n, double lo, double hi,
                         FILE *out)
{
    size_t first = n, last = n;

    for (size_t i = 0; i < n; i++)
        if (!isnan(v[i])) {
            if (first == n)
                first = i;
            last = i;
        }
    if (first == last) {
        fprintf(out, "(%.2f GB/s)\n", v[first]);
        return;
    }
    fprintf(out, "(%.2f to %.2f GB/s", v[first], v[last]);
    if (v[first] > 0) {
        double pct = 100.0 * (v[last] - v[first]) / v[first];
        if (fabs(pct) < 0.5)
            fprintf(out, ", unchanged");
        else
            fprintf(out, ", %s %.0f%%", pct > 0 ? "up" : "down", fabs(pct));
    }
    if (lo < fmin(v[first], v[last]) || hi > fmax(v[first], v[last]))
        fprintf(out, "; low %.2f, high %.2f", lo, hi);
    fprintf(out, ")\n");
}

static void print_table(const char *dir, const struct entry *e, size_t n,
                        bool utf8, FILE *out)
{
    double *trend;
    char busbw[24], floor[24], size[24], *line;
    double lo = INFINITY, hi = -INFINITY;

    fprintf(out, "%zu run%s in %s, newest first\n", n, n == 1 ? "" : "s",
            dir);
    fprintf(out, "%-22s %-6s %-4s %-28s %-7s %10s %8s %10s\n", "STARTED",
            "STATUS", "EXIT", "REASON", "GPUS", "BUSBW GB/s", "AT SIZE",
            "FLOOR GB/s");
    for (size_t i = 0; i < n; i++) {
        if (e[i].error[0]) {
            fprintf(out, "%-22s unreadable: %s\n", e[i].file, e[i].error);
            continue;
        }
        gbps(e[i].busbw, busbw, sizeof(busbw));
        gbps(e[i].floor, floor, sizeof(floor));
        human_bytes(e[i].bytes, size, sizeof(size));
        fprintf(out, "%-22s %-6s %-4d %-28s %-7s %10s %8s %10s\n",
                e[i].started[0] ? e[i].started : e[i].file,
                e[i].status[0] ? e[i].status : "?", e[i].exit_code,
                e[i].reason[0] ? e[i].reason : "-",
                e[i].gpu[0] ? e[i].gpu : "-", busbw, size, floor);
    }
    /* The trend reads left to right, oldest to newest, like a chart. */
    trend = malloc((n ? n : 1) * sizeof(*trend));
    line = malloc(4 * n + 1);
    if (!trend || !line) {
        free(trend);
        free(line);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        trend[i] = e[n - 1 - i].busbw;
        if (!isnan(trend[i])) {
            lo = trend[i] < lo ? trend[i] : lo;
            hi = trend[i] > hi ? trend[i] : hi;
        }
    }
    if (hi >= lo) {
        pf_history_sparkline(trend, (int)n, utf8, line, 4 * n + 1);
        fprintf(out, "busbw trend, oldest to newest: %s  ", line);
        print_change(trend, n, lo, hi, out);
    }
    free(trend);
    free(line);
}

static void add_num(cJSON *o, const char *key, double v)
{
    if (isnan(v))
        cJSON_AddNullToObject(o, key);
    else
        cJSON_AddNumberToObject(o, key, v);
}

static pf_err print_json(const char *dir, const struct entry *e, size_t n,
                         FILE *out, char *err)
{
    cJSON *arr = cJSON_CreateArray();
    char path[PF_HISTORY_NAME + 4096], *text;

    for (size_t i = 0; arr && i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        snprintf(path, sizeof(path), "%s/%s", dir, e[i].file);
        cJSON_AddStringToObject(o, "file", path);
        if (e[i].error[0]) {
            cJSON_AddStringToObject(o, "error", e[i].error);
        } else {
            pf_json_add_text(o, "started_at", e[i].started);
            pf_json_add_text(o, "status", e[i].status);
            cJSON_AddNumberToObject(o, "exit_code", e[i].exit_code);
            pf_json_add_text(o, "reason", e[i].reason);
            pf_json_add_text(o, "class", e[i].cls);
            add_num(o, "busbw_gbps", e[i].busbw);
            add_num(o, "bytes", e[i].bytes);
            add_num(o, "floor_gbps", e[i].floor);
            pf_json_add_text(o, "gpu_health", e[i].gpu);
        }
        cJSON_AddItemToArray(arr, o);
    }
    text = arr ? cJSON_Print(arr) : NULL;
    cJSON_Delete(arr);
    if (!text)
        return pf_fail(err, PF_ERR_NOMEM, "history: out of memory");
    fprintf(out, "%s\n", text);
    free(text);
    return PF_OK;
}

pf_err pf_history_print(const char *dir, bool json, bool utf8, FILE *out,
                        char *err)
{
    struct entry *e;
    char **names;
    size_t n;
    pf_err rc;

    if (!dir[0])
        return pf_fail(err, PF_ERR_USAGE, "no history directory: give "
                       "--history-dir DIR (or EFA_PREFLIGHT_HISTORY_DIR)");
    rc = pf_history_list(dir, &names, &n, err);
    if (rc != PF_OK)
        return rc;
    e = calloc(n ? n : 1, sizeof(*e));
    if (!e) {
        pf_history_names_free(names, n);
        return pf_fail(err, PF_ERR_NOMEM, "history: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        read_entry(dir, names[i], &e[i]);
    if (json)
        rc = print_json(dir, e, n, out, err);
    else if (n == 0)
        fprintf(out, "no runs recorded in %s\n", dir);
    else
        print_table(dir, e, n, utf8, out);
    free(e);
    pf_history_names_free(names, n);
    return rc;
}
