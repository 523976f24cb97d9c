/* pf_boot_open: the rendezvous for local, static and k8s bootstraps, MPI
 * under mpirun. Turns the peer table and the boot arguments into a
 * rendezvous configuration. */
#include "bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/clock.h"
#include "../util/fsutil.h"
#include "../util/log.h"
#include "../util/progress.h"
#include "../util/crypto.h"
#include "../util/sanitize.h"
#include "rendezvous.h"

#define SECRET_MAX (64 * 1024)
#define SECRET_MIN 16         /* shorter ones draw a warning */
#define OWNER_KEY "efa-preflight rendezvous key v1"

/* Rank 0 gives up joining a little before the others do, so its ABORT
 * naming the missing ranks reaches them before their own deadline and
 * everyone still has time to report within it. */
static int64_t root_margin_ms(int timeout_s)
{
    int64_t m = (int64_t)timeout_s * 200;     /* a fifth of the timeout */
    return m > 3000 ? 3000 : m;
}

static void warn_mixed_types(const struct pf_rdv_facts *t, int world)
{
    for (int i = 1; i < world; i++) {
        if (strcmp(t[i].instance_type, t[0].instance_type)) {
            pf_warn("ranks run on different instance types: rank 0 on %s, "
                    "rank %d on %s", t[0].instance_type[0] ? t[0].instance_type
                                                           : "unknown",
                    i, t[i].instance_type[0] ? t[i].instance_type : "unknown");
            return;
        }
    }
}

/* --secret-file: trailing newlines (LF or CRLF) are not part of the
 * secret, so `echo s > f` and `printf s > f` agree (docs/internals/hardening.md). */
static pf_err read_secret(const char *path, char **out, size_t *len,
                          char *err)
{
    struct stat st;
    pf_err rc = pf_read_file(path, SECRET_MAX, out, len, err);

    if (rc != PF_OK) {
        pf_err_prefix(err, "--secret-file");
        return rc == PF_ERR_NOMEM ? rc : PF_ERR_USAGE;
    }
    while (*len > 0 && ((*out)[*len - 1] == '\n' || (*out)[*len - 1] == '\r'))
        (*out)[--*len] = '\0';
    if (*len == 0) {
        free(*out);
        *out = NULL;
        return pf_fail(err, PF_ERR_USAGE, "--secret-file %s is empty", path);
    }
    if (*len < SECRET_MIN)
        pf_warn("--secret-file %s holds %zu bytes: a secret shorter than %d "
                "bytes can be guessed (e.g. head -c 32 /dev/urandom | base64 "
                "> file)", path, *len, SECRET_MIN);
    if (stat(path, &st) == 0 && (st.st_mode & S_IROTH))
        pf_warn("--secret-file %s is readable by every user (mode %04o): "
                "chmod 600 it (a Kubernetes Secret volume: defaultMode 0400)",
                path, (unsigned)(st.st_mode & 07777));
    return PF_OK;
}

/* k8s without a secret file: a key only the group's pods can know, from
 * the uid of the object they share (docs/internals/hardening.md, "Rendezvous security"). */
static pf_err owner_key(const struct pf_peers *p, char **out, size_t *len,
                        char *err)
{
    const struct pf_bytes parts[] = { { p->owner, strlen(p->owner) },
                                      { "\n", 1 },
                                      { p->run_id, strlen(p->run_id) } };

    *out = malloc(PF_SHA256_LEN);
    if (!*out)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the rendezvous key");
    if (!pf_hmac_sha256(OWNER_KEY, strlen(OWNER_KEY), parts, 3,
                        (uint8_t *)*out)) {
        free(*out);
        *out = NULL;
        return pf_fail(err, PF_ERR_NOMEM, "libcrypto could not derive the "
                       "rendezvous key");
    }
    *len = PF_SHA256_LEN;
    return PF_OK;
}

pf_err pf_boot_open(const struct pf_boot_args *a, struct pf_boot **out,
                    char *err)
{
    const struct pf_peers *p = a->peers;
    struct pf_rdv_cfg rc_cfg;
    struct pf_rdv_facts *table;
    char *secret = NULL;
    size_t secret_len = 0;
    bool k8s;
    pf_err rc;

    *out = NULL;
    if (p->bootstrap == PF_BOOT_MPI)
        return pf_boot_open_mpi(a, out, err);
    if (p->world < 1 || !p->list || p->rank < 0 || p->rank >= p->world)
        return pf_fail(err, PF_ERR_USAGE, "no peer table: rank %d of %d "
                       "(discovery has not run)", p->rank, p->world);
    k8s = p->bootstrap == PF_BOOT_K8S;
    if (a->secret_file[0])
        rc = read_secret(a->secret_file, &secret, &secret_len, err);
    else if (k8s && p->owner[0])
        rc = owner_key(p, &secret, &secret_len, err);
    else
        rc = PF_OK;
    if (rc != PF_OK)
        return rc;
    /* The owner's uid is the key's material: only its kind is named. */
    if (p->world > 1 && a->secret_file[0])
        pf_info("rendezvous: HELLOs signed with --secret-file");
    else if (p->world > 1 && secret)
        pf_info("rendezvous: HELLOs signed with a key from the %.*s's uid",
                (int)strcspn(p->owner, "/"), p->owner);
    else if (p->world > 1)
        pf_info("rendezvous: HELLOs unsigned (no --secret-file%s)",
                k8s ? ", no single owner of the group" : "");

    memset(&rc_cfg, 0, sizeof(rc_cfg));
    rc_cfg.rank = p->rank;
    rc_cfg.world = p->world;
    snprintf(rc_cfg.root_host, sizeof(rc_cfg.root_host), "%s", p->list[0].host);
    rc_cfg.root_port = p->list[0].port > 0 ? p->list[0].port : a->port;
    /* local ranks never leave the machine: keep the port off the network. */
    snprintf(rc_cfg.bind_addr, sizeof(rc_cfg.bind_addr), "%s",
             a->bind_addr[0] ? a->bind_addr
             : p->bootstrap == PF_BOOT_LOCAL ? "127.0.0.1" : "");
    /* k8s: rank 0 accepts rank r only from its pod IP, so the others dial
     * from theirs (a pod with several interfaces could pick another). */
    rc_cfg.bind_source = k8s;
    if (k8s && p->rank != 0 && !rc_cfg.bind_addr[0])
        snprintf(rc_cfg.bind_addr, sizeof(rc_cfg.bind_addr), "%s",
                 p->list[p->rank].host);
    snprintf(rc_cfg.run_id, sizeof(rc_cfg.run_id), "%s", p->run_id);
    rc_cfg.secret = (const uint8_t *)secret;
    rc_cfg.secret_len = secret_len;
    /* In k8s a pod's hostname is its pod name: the Node name is what
     * tells hosts apart, and what ranks that discovered only rank 0 and
     * themselves count nodes by once the table arrives. */
    snprintf(rc_cfg.self.hostname, sizeof(rc_cfg.self.hostname), "%s",
             k8s && p->list[p->rank].node[0]
                 ? p->list[p->rank].node : a->hostname);
    snprintf(rc_cfg.self.instance_type, sizeof(rc_cfg.self.instance_type), "%s",
             a->instance_type);
    rc_cfg.self.efa_count = a->efa_count;
    rc_cfg.self.gpu_count = a->gpu_count;
    rc_cfg.expected = p->list;
    rc_cfg.fault = a->fault;
    rc_cfg.progress = a->progress;
    rc_cfg.gone = a->gone;
    rc_cfg.gone_ctx = a->gone_ctx;
    rc_cfg.deadline = p->rank == 0 ? a->deadline - root_margin_ms(a->timeout_s)
                                   : a->deadline;

    table = calloc((size_t)p->world, sizeof(*table));
    if (!table) {
        free(secret);
        return pf_fail(err, PF_ERR_NOMEM, "no memory for the peer table");
    }
    pf_progress_begin(a->progress, "waiting for peers", pf_now_ms());
    rc = pf_rdv_open(&rc_cfg, out, table, err);
    pf_progress_end(a->progress);
    if (secret) {
        memset(secret, 0, secret_len);
        free(secret);
    }
    if (rc == PF_OK) {
        /* A k8s rank other than 0 knows only rank 0 and itself from
         * discovery: the WELCOME's table names everyone else. */
        struct pf_roster *ro = a->roster;
        for (int i = 0; ro && i < p->world && i < ro->world; i++) {
            struct pf_peer *x = &ro->list[i];
            if (!x->node[0])
                /* A peer's own word for its host: sanitised before
                 * it reaches a message or the report. */
                pf_sanitize(x->node, sizeof(x->node), table[i].hostname);
            if (!x->host[0])
                pf_sanitize(x->host, sizeof(x->host), table[i].addr);
        }
        warn_mixed_types(table, p->world);
    }
    free(table);
    return rc;
}
