/* Private fixture copies for the NIC counter tests (nic_fixture.h). */
#include "nic_fixture.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "unit_files.h"

void pf_test_fixture_copy(const char *name, char *out, size_t len)
{
    char root[PATH_MAX], cmd[3 * PATH_MAX], tmpl[] = "/tmp/pf-nicfx-XXXXXX";

    pf_test_sysfs_fixture(root, sizeof(root), NULL);
    cr_assert(mkdtemp(tmpl), "mkdtemp");
    snprintf(cmd, sizeof(cmd), "cp -a '%s/%s' '%s/root'", root, name, tmpl);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    snprintf(out, len, "%s/root", tmpl);
}

void pf_test_fixture_drop(const char *root)
{
    char cmd[PATH_MAX + 32];
    const char *slash = strrchr(root, '/');

    if (!slash || strncmp(root, "/tmp/pf-nicfx-", 14))
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(slash - root), root);
    cr_assert_eq(system(cmd), 0);
}

static void counter_path(const char *root, const char *dev, const char *c,
                         char *out, size_t len)
{
    snprintf(out, len, "%s/sys/class/infiniband/%s/ports/1/hw_counters/%s",
             root, dev, c);
}

void pf_test_counter_set(const char *root, const char *dev,
                         const char *counter, uint64_t value)
{
    char path[PATH_MAX];
    FILE *f;

    counter_path(root, dev, counter, path, sizeof(path));
    f = fopen(path, "w");
    cr_assert(f, "cannot write %s", path);
    fprintf(f, "%llu\n", (unsigned long long)value);
    fclose(f);
}

void pf_test_counter_add(const char *root, const char *dev,
                         const char *counter, uint64_t delta)
{
    char path[PATH_MAX];
    unsigned long long v = 0;
    FILE *f;

    counter_path(root, dev, counter, path, sizeof(path));
    f = fopen(path, "r");
    cr_assert(f, "cannot read %s", path);
    cr_assert_eq(fscanf(f, "%llu", &v), 1, "%s", path);
    fclose(f);
    pf_test_counter_set(root, dev, counter, v + delta);
}

void pf_test_cfg_root(struct pf_config *cfg, const char *root)
{
    pf_config_defaults(cfg);
    cfg->no_imds = true;
    snprintf(cfg->sysfs_root, sizeof(cfg->sysfs_root), "%s", root);
    snprintf(cfg->dev_root, sizeof(cfg->dev_root), "%s", root);
}
