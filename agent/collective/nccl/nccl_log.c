#include "nccl_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "../../util/fsutil.h"
#include "../../util/log.h"

/* The log of a sweep is a few hundred lines per rank; more is noise. */
#define LOG_MAX_BYTES (16u << 20)

/* ------------------------------------------------------------- parsing */

/* Append s to a comma-separated list unless already present. */
static void list_add(char *list, size_t len, const char *s)
{
    size_t n = strlen(s);
    const char *p = list;

    /* An empty label ("via" with nothing after it) names nothing, and
     * strstr would find it everywhere without advancing. */
    if (n == 0)
        return;
    while ((p = strstr(p, s)) != NULL) {
        bool starts = p == list || p[-1] == ',';
        bool ends = p[n] == '\0' || p[n] == ',';
        if (starts && ends)
            return;
        p += n;
    }
    size_t used = strlen(list);
    if (used + (used ? 1 : 0) + n + 1 > len)
        return;                       /* full: keep what fits */
    snprintf(list + used, len - used, "%s%s", used ? "," : "", s);
}

/* "NET/Libfabric/0/GDRDMA" -> "NET/Libfabric/GDRDMA"; "NET/IB/0(1)" ->
 * "NET/IB"; P2P and SHM labels are kept as NCCL prints them. */
static void transport_label(const char *via, char *out, size_t len)
{
    if (strncmp(via, "NET/", 4) != 0) {
        snprintf(out, len, "%s", via);
        return;
    }
    const char *name = via + 4;
    const char *slash = strchr(name, '/');
    size_t nlen = slash ? (size_t)(slash - name) : strlen(name);
    bool gdr = strstr(via, "/GDRDMA") != NULL;
    snprintf(out, len, "NET/%.*s%s", (int)nlen, name, gdr ? "/GDRDMA" : "");
}

/* Copy src up to the end of the line, trailing blanks and dots dropped. */
static void copy_field(char *dst, size_t len, const char *src)
{
    size_t n = strcspn(src, "\r\n");
    while (n > 0 && (src[n - 1] == ' ' || src[n - 1] == '\t' ||
                     src[n - 1] == '.'))
        n--;
    if (n >= len)
        n = len - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void parse_channel(const char *via, struct pf_nccl_facts *f)
{
    char raw[96], label[96];

    copy_field(raw, sizeof(raw), via);
    transport_label(raw, label, sizeof(label));
    f->channels++;
    if (strncmp(raw, "NET/", 4) == 0) {
        f->net_channels++;
        if (strncmp(raw, "NET/Socket/", 11) == 0 ||
            strcmp(raw, "NET/Socket") == 0)
            f->socket_channels++;
        if (strstr(raw, "/GDRDMA"))
            f->gdr_channels++;
    } else if (strncmp(raw, "P2P/", 4) == 0) {
        f->p2p_channels++;
    } else if (strncmp(raw, "SHM", 3) == 0) {
        f->shm_channels++;
    }
    list_add(f->transports, sizeof(f->transports), label);
}

static void parse_line(const char *line, struct pf_nccl_facts *f)
{
    const char *msg = strstr(line, "NCCL INFO ");
    const char *p;

    msg = msg ? msg + 10 : line;
    if (strncmp(msg, "NCCL version ", 13) == 0) {
        size_t n = strcspn(msg + 13, " \r\n");
        if (n >= sizeof(f->version))
            n = sizeof(f->version) - 1;
        memcpy(f->version, msg + 13, n);
        f->version[n] = '\0';
    } else if (strstr(msg, "NET/Plugin: Could not find") ||
               strstr(msg, "NET/Plugin : Could not find") ||
               strstr(msg, "NET/Plugin : No plugin found")) {
        f->plugin_missing = true;
    } else if ((p = strstr(msg, "Loaded net plugin ")) != NULL) {
        char name[64];
        copy_field(name, sizeof(name), p + 18);
        char *v = strstr(name, " (v");
        if (v)
            *v = '\0';
        f->plugin_loaded = true;
        snprintf(f->plugin, sizeof(f->plugin), "%s", name);
    } else if (strstr(msg, "Successfully loaded external")) {
        f->plugin_loaded = true;
    } else if ((p = strstr(msg, "NET/OFI Initializing aws-ofi-nccl")) != NULL) {
        f->plugin_loaded = true;
        if (!f->plugin[0])
            copy_field(f->plugin, sizeof(f->plugin), p + 18);
    } else if (strncmp(msg, "Using network ", 14) == 0) {
        copy_field(f->network, sizeof(f->network), msg + 14);
    } else if (strncmp(msg, "Channel ", 8) == 0 &&
               (p = strstr(msg, " via ")) != NULL) {
        parse_channel(p + 5, f);
    }
}

void pf_nccl_log_parse(const char *text, struct pf_nccl_facts *f)
{
    char line[1024];
    const char *p = text;

    memset(f, 0, sizeof(*f));
    while (p && *p) {
        size_t n = strcspn(p, "\n");
        size_t keep = n < sizeof(line) - 1 ? n : sizeof(line) - 1;
        memcpy(line, p, keep);
        line[keep] = '\0';
        parse_line(line, f);
        p += n;
        if (*p == '\n')
            p++;
    }
    /* The loaded plugin wins over the names tried before it. */
    if (f->plugin_loaded)
        f->plugin_missing = false;
    /* NET first: it is the part the verdict is about. */
    if (f->net_channels > 0 && strncmp(f->transports, "NET/", 4) != 0) {
        char sorted[sizeof(f->transports)] = "";
        char copy[sizeof(f->transports)];
        for (int pass = 0; pass < 2; pass++) {
            snprintf(copy, sizeof(copy), "%s", f->transports);
            for (char *save = NULL, *t = strtok_r(copy, ",", &save); t;
                 t = strtok_r(NULL, ",", &save))
                if ((strncmp(t, "NET/", 4) == 0) == (pass == 0))
                    list_add(sorted, sizeof(sorted), t);
        }
        snprintf(f->transports, sizeof(f->transports), "%s", sorted);
    }
}

void pf_nccl_facts_apply(const struct pf_nccl_facts *f,
                         struct pf_fabric_facts *c)
{
    snprintf(c->transport, sizeof(c->transport), "%s", f->transports);
    snprintf(c->nccl_network, sizeof(c->nccl_network), "%s", f->network);
    c->net_plugin_loaded = f->plugin_loaded;
    c->net_gdr = f->gdr_channels > 0;
    c->inter_node_socket = f->socket_channels > 0;
}

/* ------------------------------------------------------- the log file */

pf_err pf_nccl_log_expand(const char *pattern, const char *host, long pid,
                          char *out, size_t len, char *err)
{
    size_t o = 0;

    for (const char *p = pattern; *p; p++) {
        char piece[PF_NAME_MAX + 32];
        if (*p != '%' || p[1] == '\0') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            p++;
            if (*p == 'h')
                snprintf(piece, sizeof(piece), "%.*s",
                         (int)strcspn(host, "."), host);
            else if (*p == 'p')
                snprintf(piece, sizeof(piece), "%ld", pid);
            else if (*p == '%')
                snprintf(piece, sizeof(piece), "%%");
            else
                snprintf(piece, sizeof(piece), "%%%c", *p);
        }
        size_t n = strlen(piece);
        if (o + n + 1 > len)
            return pf_fail(err, PF_ERR_USAGE,
                           "NCCL_DEBUG_FILE=%s: expanded path too long",
                           pattern);
        memcpy(out + o, piece, n);
        o += n;
    }
    out[o] = '\0';
    return PF_OK;
}

static bool level_is_info(const char *v)
{
    return v && (strcasecmp(v, "INFO") == 0 || strcasecmp(v, "TRACE") == 0);
}

pf_err pf_nccl_log_arm(struct pf_nccl_log *l, char *err)
{
    const char *user = getenv("NCCL_DEBUG_FILE");

    memset(l, 0, sizeof(*l));
    if (user && *user) {
        char host[PF_NAME_MAX] = "";
        if (gethostname(host, sizeof(host) - 1) != 0)
            snprintf(host, sizeof(host), "localhost");
        pf_err rc = pf_nccl_log_expand(user, host, (long)getpid(), l->path,
                                       sizeof(l->path), err);
        if (rc != PF_OK)
            return rc;
        l->users_file = true;
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(l->dir, sizeof(l->dir), "%s/efa-preflight-nccl.XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(l->dir)) {
            pf_err rc = pf_fail(err, PF_ERR_IO,
                                "cannot create a folder for NCCL's log (%s)",
                                l->dir);
            l->dir[0] = '\0';
            return rc;
        }
        snprintf(l->path, sizeof(l->path), "%s/nccl.log", l->dir);
        if (strchr(l->path, '%')) {
            pf_err rc = pf_fail(err, PF_ERR_USAGE,
                                "TMPDIR holds '%%', which NCCL_DEBUG_FILE "
                                "would expand: %s", l->path);
            pf_nccl_log_disarm(l);
            return rc;
        }
        setenv("NCCL_DEBUG_FILE", l->path, 1);
        l->set_file = true;
    }
    if (!level_is_info(getenv("NCCL_DEBUG"))) {
        const char *old = getenv("NCCL_DEBUG");
        snprintf(l->old_debug, sizeof(l->old_debug), "%s", old ? old : "");
        setenv("NCCL_DEBUG", "INFO", 1);
        l->set_debug = true;
    }
    if (!getenv("NCCL_DEBUG_SUBSYS")) {
        setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
        l->set_subsys = true;
    }
    pf_debug("NCCL log: %s%s", l->path, l->users_file ? " (user's)" : "");
    return PF_OK;
}

pf_err pf_nccl_log_read(const struct pf_nccl_log *l, struct pf_nccl_facts *f,
                        char *err)
{
    char *text = NULL;
    pf_err rc;

    memset(f, 0, sizeof(*f));
    if (!l->path[0])
        return pf_fail(err, PF_ERR_NOTFOUND, "NCCL log was not set up");
    rc = pf_read_file(l->path, LOG_MAX_BYTES, &text, NULL, err);
    if (rc != PF_OK)
        return rc;
    pf_nccl_log_parse(text, f);
    free(text);
    return PF_OK;
}

void pf_nccl_log_disarm(struct pf_nccl_log *l)
{
    if (l->set_file)
        unsetenv("NCCL_DEBUG_FILE");
    if (l->set_debug && l->old_debug[0])
        setenv("NCCL_DEBUG", l->old_debug, 1);
    else if (l->set_debug)
        unsetenv("NCCL_DEBUG");
    if (l->set_subsys)
        unsetenv("NCCL_DEBUG_SUBSYS");
    if (l->dir[0]) {
        unlink(l->path);
        rmdir(l->dir);
    }
    memset(l, 0, sizeof(*l));
}
