/* NCCL's external network plugin (aws-ofi-nccl on EFA), looked up the way
 * NCCL looks it up, so a node check can say before any collective whether
 * NCCL will reach EFA or fall back to sockets:
 *   NCCL_NET_PLUGIN unset      dlopen("libnccl-net.so")
 *   NCCL_NET_PLUGIN=NAME       dlopen(NAME), then "libnccl-net-NAME.so" when
 *                              NAME is neither a path nor "lib*.so"
 * A library that loads must export one of NCCL's ncclNetPlugin_vN tables.
 *
 * The library stays loaded: NCCL opens the same name later in this process
 * and gets the same handle; unloading a plugin that may have registered
 * exit handlers is not safe. */
#include "probe.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NET_API_NEWEST 11
#define NET_API_OLDEST 2

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The name NCCL tries second, or "" when it tries only one. */
static void fallback_name(const char *env, char *out, size_t len)
{
    out[0] = '\0';
    if (env && env[0] && !strchr(env, '/') &&
        !(!strncmp(env, "lib", 3) && ends_with(env, ".so")))
        snprintf(out, len, "libnccl-net-%s.so", env);
}

/* The highest plugin API the library exports, 0 if none. */
static int plugin_api(void *h)
{
    char sym[32];

    for (int v = NET_API_NEWEST; v >= NET_API_OLDEST; v--) {
        snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", v);
        if (dlsym(h, sym))
            return v;
    }
    return 0;
}

static void *try_open(const char *name, struct pf_node *node)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    const char *why;
    size_t used;

    if (h)
        return h;
    why = dlerror();
    used = strlen(node->net_plugin_error);
    snprintf(node->net_plugin_error + used,
             sizeof(node->net_plugin_error) - used, "%s%s", used ? "; " : "",
             why ? why : name);
    return NULL;
}

void pf_probe_net_plugin(struct pf_node *node)
{
    const char *env = getenv("NCCL_NET_PLUGIN");
    const char *first = env && env[0] ? env : "libnccl-net.so";
    char second[96];
    struct link_map *lm = NULL;
    void *h;
    int api;

    node->net_plugin_path[0] = node->net_plugin_error[0] = '\0';
    node->net_plugin_api = 0;
    snprintf(node->net_plugin_name, sizeof(node->net_plugin_name), "%s",
             first);
    h = try_open(first, node);
    fallback_name(env, second, sizeof(second));
    if (!h && second[0]) {
        h = try_open(second, node);
        if (h)
            snprintf(node->net_plugin_name, sizeof(node->net_plugin_name),
                     "%s", second);
    }
    if (!h)
        return;
    node->net_plugin_error[0] = '\0';
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name[0])
        snprintf(node->net_plugin_path, sizeof(node->net_plugin_path), "%s",
                 lm->l_name);
    else
        snprintf(node->net_plugin_path, sizeof(node->net_plugin_path), "%s",
                 node->net_plugin_name);
    api = plugin_api(h);
    if (api == 0)
        snprintf(node->net_plugin_error, sizeof(node->net_plugin_error),
                 "%s loads but exports no ncclNetPlugin_v%d..v%d table: not "
                 "an NCCL net plugin", node->net_plugin_path, NET_API_OLDEST,
                 NET_API_NEWEST);
    node->net_plugin_api = api;
}
