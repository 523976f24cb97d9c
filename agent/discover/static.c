/* `static` bootstrap: every rank is told the whole group on the command
 * line, in rank order, and its own rank. */
#include "discover.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/crypto.h"

#define ENTRY_MAX (PF_NAME_MAX + 16)

static bool host_char_ok(char c, bool bracketed)
{
    return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_' ||
           (bracketed && (c == ':' || c == '%'));
}

/* One "host:port" or "[v6]:port" entry (already trimmed). */
static pf_err parse_entry(const char *e, int idx, struct pf_peer *p, char *err)
{
    const char *colon, *host = e, *port;
    size_t hlen;
    bool bracketed = e[0] == '[';
    char *end;
    long v;

    if (bracketed) {
        const char *close = strchr(e, ']');
        if (!close)
            return pf_fail(err, PF_ERR_USAGE, "--peers entry %d '%s': "
                           "missing ']'", idx, e);
        host = e + 1;
        hlen = (size_t)(close - host);
        colon = close[1] == ':' ? close + 1 : NULL;
        if (!colon)
            return pf_fail(err, PF_ERR_USAGE, "--peers entry %d '%s': missing "
                           ":port after ']'", idx, e);
    } else {
        colon = strrchr(e, ':');
        if (!colon)
            return pf_fail(err, PF_ERR_USAGE, "--peers entry %d '%s': missing "
                           ":port", idx, e);
        if (memchr(e, ':', (size_t)(colon - e)))
            return pf_fail(err, PF_ERR_USAGE, "--peers entry %d '%s': IPv6 "
                           "addresses need brackets, e.g. [fd00::1]:29600",
                           idx, e);
        hlen = (size_t)(colon - e);
    }
    if (hlen == 0)
        return pf_fail(err, PF_ERR_USAGE, "--peers entry %d '%s': empty host",
                       idx, e);
    if (hlen >= sizeof(p->host))
        return pf_fail(err, PF_ERR_USAGE, "--peers entry %d: host is longer "
                       "than %zu characters", idx, sizeof(p->host) - 1);
    for (size_t i = 0; i < hlen; i++)
        if (!host_char_ok(host[i], bracketed))
            return pf_fail(err, PF_ERR_USAGE, "--peers entry %d '%s': host "
                           "has an invalid character '%c'", idx, e, host[i]);
    port = colon + 1;
    v = isdigit((unsigned char)*port) ? strtol(port, &end, 10) : -1;
    if (v < 1 || v > 65535 || *end)
        return pf_fail(err, PF_ERR_USAGE, "--peers entry %d '%s': port '%s' "
                       "is not a number in 1..65535", idx, e, port);
    memcpy(p->host, host, hlen);
    p->host[hlen] = '\0';
    p->port = (int)v;
    return PF_OK;
}

pf_err pf_parse_peers(const char *spec, struct pf_peer **out, int *n,
                      char *err)
{
    struct pf_peer *list = NULL;
    const char *s = spec;
    size_t entries = 1;
    int count = 0;

    *out = NULL;
    *n = 0;
    if (!spec || !*spec)
        return pf_fail(err, PF_ERR_USAGE, "--peers is empty: give host:port "
                       "of every rank, comma-separated, in rank order");
    /* One entry per comma, plus one: sized by the list itself. Ranks are
     * ints and travel as u32 (rendezvous.h). */
    for (const char *c = spec; (c = strchr(c, ',')) != NULL; c++)
        entries++;
    if (entries > INT_MAX)
        return pf_fail(err, PF_ERR_USAGE, "--peers lists %zu ranks, more "
                       "than a rank number holds (%d)", entries, INT_MAX);
    list = calloc(entries, sizeof(*list));
    if (!list)
        return pf_fail(err, PF_ERR_NOMEM, "no memory for a peer list of %zu "
                       "ranks", entries);
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        char entry[ENTRY_MAX];
        pf_err rc;

        while (len && isspace((unsigned char)*s)) {
            s++;
            len--;
        }
        while (len && isspace((unsigned char)s[len - 1]))
            len--;
        if (len == 0) {
            free(list);
            return pf_fail(err, PF_ERR_USAGE, "--peers entry %d is empty "
                           "(stray comma?)", count + 1);
        }
        if (len >= sizeof(entry)) {
            free(list);
            return pf_fail(err, PF_ERR_USAGE, "--peers entry %d is longer "
                           "than %zu characters", count + 1, sizeof(entry) - 1);
        }
        memcpy(entry, s, len);
        entry[len] = '\0';
        rc = parse_entry(entry, count + 1, &list[count], err);
        if (rc != PF_OK) {
            free(list);
            return rc;
        }
        list[count].rank = count;
        count++;
        if (!comma)
            break;
        s = comma + 1;
    }
    *out = list;
    *n = count;
    return PF_OK;
}

pf_err pf_discover_static(struct pf_run *run, char *err)
{
    struct pf_peers *p = &run->peers;
    uint8_t d[PF_SHA256_LEN];
    char hex[2 * PF_SHA256_LEN + 1];
    int n = 0;
    pf_err rc;

    rc = pf_parse_peers(run->cfg.peers, &p->list, &n, err);
    if (rc != PF_OK)
        return rc;
    if (run->cfg.world_size > 0 && run->cfg.world_size != n)
        return pf_fail(err, PF_ERR_USAGE, "--world-size %d but --peers lists "
                       "%d ranks", run->cfg.world_size, n);
    if (run->cfg.rank < 0)
        return pf_fail(err, PF_ERR_USAGE, "--bootstrap static needs --rank "
                       "(0..%d: this process's position in --peers)", n - 1);
    if (run->cfg.rank >= n)
        return pf_fail(err, PF_ERR_USAGE, "--rank %d is outside 0..%d "
                       "(--peers lists %d ranks)", run->cfg.rank, n - 1, n);
    p->world = n;
    p->rank = run->cfg.rank;
    if (run->cfg.run_id[0]) {
        snprintf(p->run_id, sizeof(p->run_id), "%s", run->cfg.run_id);
    } else {
        /* Same list on every rank -> same id; a rank given another list
         * is rejected by rank 0. */
        pf_sha256(run->cfg.peers, strlen(run->cfg.peers), d);
        pf_hex(d, 8, hex);
        snprintf(p->run_id, sizeof(p->run_id), "static-%s", hex);
    }
    return PF_OK;
}
