/* config: flags > EFA_PREFLIGHT_* env > YAML file (--config) > defaults.
 *
 * Every option has one name used three ways: YAML key `fabric_provider`,
 * env EFA_PREFLIGHT_FABRIC_PROVIDER, flag --fabric-provider. Unknown keys,
 * wrong types and out-of-range values are errors naming file:line and key
 * (PF_ERR_CONFIG / PF_ERR_USAGE, exit 2). */
#ifndef PF_CONFIG_H
#define PF_CONFIG_H

#include <stdio.h>

#include "../types/config.h"
#include "../util/err.h"

void pf_config_defaults(struct pf_config *cfg);
/* Release what the options hold on the heap (--peers); cfg stays usable
 * with those options unset. pf_config_defaults and pf_config_load do not
 * free: call this before reusing a loaded config. */
void pf_config_free(struct pf_config *cfg);

/* Parse argv (argv[0] is the command name, e.g. "node"), env and the YAML
 * file named by --config / EFA_PREFLIGHT_CONFIG. Sets *want_help when
 * --help was given. */
pf_err pf_config_load(struct pf_config *cfg, enum pf_command cmd, int argc,
                      char **argv, char **envp, bool *want_help, char *err);

/* Load only a YAML file on top of cfg (used by pf_config_load and tests). */
pf_err pf_config_load_yaml(struct pf_config *cfg, const char *path,
                           char *err);
/* Same, from memory; name is used in messages. */
pf_err pf_config_load_yaml_buf(struct pf_config *cfg, const char *name,
                               const char *buf, size_t len, char *err);

/* "node", "run", ...: the command as typed. */
const char *pf_command_name(enum pf_command cmd);
/* The word of an enum option's value, as typed ("?" for none of them). */
const char *pf_engine_name(enum pf_engine_kind e);
const char *pf_bootstrap_name(enum pf_bootstrap b);
const char *pf_mode_name(enum pf_mode m);
const char *pf_on_failure_name(enum pf_on_failure f);
const char *pf_fail_action_name(enum pf_fail_action a);
const char *pf_log_level_name(enum pf_log_level l);

/* Usage text for one command (all its options, env names, defaults). */
void pf_config_usage(enum pf_command cmd, FILE *out);

/* Parse "64M", "1G", "8" into bytes. */
pf_err pf_parse_size(const char *s, uint64_t *out, char *err);

/* The one `auto` bootstrap rule: local for `local`, static when --peers
 * is given, mpi under mpirun (OMPI_*, PMIX_RANK, PMI_SIZE; also inside a
 * pod), k8s in a pod or with --api-server, else static. An explicit
 * --bootstrap is returned as it is. */
enum pf_bootstrap pf_config_bootstrap(const struct pf_config *cfg,
                                      char **envp);

/* What the config says about the API server and this pod, for the
 * Kubernetes client (util/kubeapi.h); the strings stay cfg's. */
struct pf_kube_given;
void pf_config_kube(const struct pf_config *cfg, struct pf_kube_given *g);

/* A cap given as a node count ("5": *count = 5, *pct = -1) or a share of
 * the cluster ("20%": *pct = 20, *count = -1). */
pf_err pf_parse_cap(const char *s, int *count, double *pct);

#endif
