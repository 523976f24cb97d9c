/* publish/history: file names that sort by time, the bounded directory
 * (oldest removed, foreign files left alone), reading back newest first,
 * and the trend. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "publish/history.h"

static char dir[64];

static void make_dir(void)
{
    snprintf(dir, sizeof(dir), "/tmp/pf-history-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static int count_files(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    cr_assert_not_null(d);
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static bool exists(const char *name)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* A report as the agent writes it, reduced to what history reads. */
static void report(char *out, size_t cap, const char *started, double busbw,
                   const char *status)
{
    snprintf(out, cap,
             "{\"schema\":\"efa-preflight.io/report/v1\",\"started_at\":\"%s\","
             "\"collective\":{\"rows\":[{\"bytes\":8},{\"bytes\":67108864}],"
             "\"peak_busbw_gbps\":1,\"floor\":{\"busbw_gbps\":300,"
             "\"judged_busbw_gbps\":%g,\"bytes\":67108864,\"source\":\"x\"}},"
             "\"verdict\":{\"status\":\"%s\",\"exit_code\":%d,\"reason\":%s,"
             "\"class\":\"%s\"}}",
             started, busbw, status, strcmp(status, "pass") ? 1 : 0,
             strcmp(status, "pass") ? "\"BandwidthBelowThreshold\"" : "null",
             strcmp(status, "pass") ? "fabric" : "ok");
}

Test(history, names_sort_by_time_and_only_ours_count)
{
    struct timespec a = { 1700000000, 999999000 }, b = { 1700000001, 0 };
    char na[PF_HISTORY_NAME], nb[PF_HISTORY_NAME];

    pf_history_name(&a, na);
    pf_history_name(&b, nb);
    cr_assert_str_eq(na, "20231114T221320.999999Z.json");
    cr_assert_lt(strcmp(na, nb), 0);
    cr_assert(pf_history_is_name(na));
    cr_assert_not(pf_history_is_name("20231114T221320.999999Z.json.tmp.42"));
    cr_assert_not(pf_history_is_name("notes.json"));
    cr_assert_not(pf_history_is_name("2023111xT221320.999999Z.json"));
}

Test(history, keeps_the_newest_and_leaves_foreign_files)
{
    char json[1024], err[PF_ERRLEN], path[256];
    FILE *f;

    make_dir();
    snprintf(path, sizeof(path), "%s/README", dir);
    f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    for (int i = 0; i < 5; i++) {
        struct timespec t = { 1700000000 + i, 0 };
        report(json, sizeof(json), "2023-11-14T22:13:20Z", 100 + i, "pass");
        cr_assert_eq(pf_history_append(dir, 3, json, &t, err), PF_OK, "%s", err);
    }
    cr_assert_eq(count_files(), 4, "3 reports and the README");
    cr_assert(exists("README"));
    cr_assert_not(exists("20231114T221320.000000Z.json"), "oldest kept");
    cr_assert_not(exists("20231114T221321.000000Z.json"), "second oldest kept");
    cr_assert(exists("20231114T221324.000000Z.json"));
    remove_dir();
}

Test(history, two_runs_in_one_microsecond_keep_both)
{
    struct timespec t = { 1700000000, 5000 };
    char err[PF_ERRLEN];

    make_dir();
    cr_assert_eq(pf_history_append(dir, 10, "{}", &t, err), PF_OK, "%s", err);
    cr_assert_eq(pf_history_append(dir, 10, "{}", &t, err), PF_OK, "%s", err);
    cr_assert(exists("20231114T221320.000005Z.json"));
    cr_assert(exists("20231114T221320.000006Z.json"));
    remove_dir();
}

Test(history, creates_its_directory_but_not_the_parents)
{
    struct timespec t = { 1700000000, 0 };
    char sub[128], err[PF_ERRLEN];

    make_dir();
    snprintf(sub, sizeof(sub), "%s/history", dir);
    cr_assert_eq(pf_history_append(sub, 10, "{}", &t, err), PF_OK, "%s", err);
    snprintf(sub, sizeof(sub), "%s/a/b", dir);
    cr_assert_eq(pf_history_append(sub, 10, "{}", &t, err), PF_ERR_IO);
    cr_assert_not_null(strstr(err, sub), "%s", err);
    remove_dir();
}

Test(history, prints_newest_first_with_a_trend)
{
    static const char *started[] = { "2026-01-01T00:00:00Z",
                                     "2026-01-02T00:00:00Z",
                                     "2026-01-03T00:00:00Z" };
    char json[1024], err[PF_ERRLEN], *buf = NULL;
    size_t len = 0;
    FILE *out;
    const char *p1, *p2, *p3;

    make_dir();
    for (int i = 0; i < 3; i++) {
        struct timespec t = { 1767225600 + 86400 * i, 0 };
        report(json, sizeof(json), started[i], 300 + 10 * i,
               i == 1 ? "fail" : "pass");
        cr_assert_eq(pf_history_append(dir, 10, json, &t, err), PF_OK);
    }
    out = open_memstream(&buf, &len);
    cr_assert_eq(pf_history_print(dir, false, false, out, err), PF_OK, "%s", err);
    fclose(out);
    p1 = strstr(buf, started[2]);
    p2 = strstr(buf, started[1]);
    p3 = strstr(buf, started[0]);
    cr_assert(p1 && p2 && p3 && p1 < p2 && p2 < p3, "%s", buf);
    cr_assert_not_null(strstr(buf, "3 runs in"), "%s", buf);
    cr_assert_not_null(strstr(buf, "BandwidthBelowThreshold"), "%s", buf);
    cr_assert_not_null(strstr(buf, "64 MiB"), "%s", buf);
    cr_assert_not_null(strstr(buf, "320.00"), "%s", buf);
    /* Oldest to newest: 300, 310, 320. */
    cr_assert_not_null(strstr(buf, "oldest to newest: _+@"), "%s", buf);
    free(buf);

    buf = NULL;
    out = open_memstream(&buf, &len);
    cr_assert_eq(pf_history_print(dir, true, false, out, err), PF_OK);
    fclose(out);
    cJSON *arr = cJSON_Parse(buf);
    cr_assert(cJSON_IsArray(arr), "%s", buf);
    cr_assert_eq(cJSON_GetArraySize(arr), 3);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
                                         "started_at")->valuestring, started[2]);
    cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1),
                                         "status")->valuestring, "fail");
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 2),
                                     "busbw_gbps")->valuedouble, 300);
    cr_assert_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 2),
                                     "floor_gbps")->valuedouble, 300);
    cJSON_Delete(arr);
    free(buf);
    remove_dir();
}

Test(history, an_unreadable_report_is_shown_not_fatal)
{
    struct timespec t = { 1700000000, 0 };
    char err[PF_ERRLEN], *buf = NULL;
    size_t len = 0;
    FILE *out;

    make_dir();
    cr_assert_eq(pf_history_append(dir, 10, "not json", &t, err), PF_OK);
    out = open_memstream(&buf, &len);
    cr_assert_eq(pf_history_print(dir, false, false, out, err), PF_OK);
    fclose(out);
    cr_assert_not_null(strstr(buf, "unreadable: not an efa-preflight report"),
                       "%s", buf);
    free(buf);
    remove_dir();
    cr_assert_eq(pf_history_print(dir, false, false, stdout, err), PF_ERR_USAGE,
                 "a missing directory is the caller's mistake");
}

Test(history, sparkline_scales_between_min_and_max)
{
    double v[] = { 1, 2, NAN, 8 }, same[] = { 5, 5 };
    char out[64];

    pf_history_sparkline(v, 4, false, out, sizeof(out));
    cr_assert_str_eq(out, "_. @");
    pf_history_sparkline(same, 2, false, out, sizeof(out));
    cr_assert_str_eq(out, "++");
    pf_history_sparkline(v, 4, true, out, sizeof(out));
    cr_assert_str_eq(out, "\u2581\u2582 \u2588");
    pf_history_sparkline(v, 4, true, out, 5);
    cr_assert_str_eq(out, "\u2581", "cut at a whole character");
}

/* The trend's numbers read in the sparkline's order, oldest first: a fall
 * from 0.45 to 0.36 says so, and a rise likewise. */
static char *trend_of(const double *busbw, int n)
{
    char json[1024], err[PF_ERRLEN], *buf = NULL, *line;
    size_t len = 0;
    FILE *out;

    make_dir();
    for (int i = 0; i < n; i++) {
        struct timespec t = { 1767225600 + 86400 * i, 0 };
        char started[32];
        snprintf(started, sizeof(started), "2026-01-0%dT00:00:00Z", i + 1);
        report(json, sizeof(json), started, busbw[i], "pass");
        cr_assert_eq(pf_history_append(dir, 10, json, &t, err), PF_OK);
    }
    out = open_memstream(&buf, &len);
    cr_assert_eq(pf_history_print(dir, false, true, out, err), PF_OK, "%s", err);
    fclose(out);
    remove_dir();
    line = strdup(strstr(buf, "busbw trend") ? strstr(buf, "busbw trend") : buf);
    free(buf);
    return line;
}

Test(history, trend_numbers_follow_the_sparkline_for_a_fall_and_a_rise)
{
    static const double fall[] = { 0.45, 0.36 }, rise[] = { 0.36, 0.45 },
                        dip[] = { 331.9, 212.8, 335.24 };
    char *t;

    t = trend_of(fall, 2);
    cr_assert_str_eq(t, "busbw trend, oldest to newest: █▁  (0.45 to 0.36 GB/s, "
                        "down 20%)\n");
    free(t);
    t = trend_of(rise, 2);
    cr_assert_str_eq(t, "busbw trend, oldest to newest: ▁█  (0.36 to 0.45 GB/s, "
                        "up 25%)\n");
    free(t);
    t = trend_of(dip, 3);
    cr_assert_str_eq(t, "busbw trend, oldest to newest: █▁█  (331.90 to 335.24 "
                        "GB/s, up 1%; low 212.80, high 335.24)\n");
    free(t);
}
