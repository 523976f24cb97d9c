#include "config.h"
#include <string.h>
/* Placeholder being replaced by the real loader in this same change. */
void pf_config_defaults(struct pf_config *cfg) { memset(cfg, 0, sizeof(*cfg)); }
pf_err pf_config_load(struct pf_config *cfg, enum pf_command cmd, int argc, char **argv, char **envp, bool *want_help, char *err)
{ (void)argc; (void)argv; (void)envp; (void)err; pf_config_defaults(cfg); cfg->command = cmd; *want_help = false; return PF_OK; }
void pf_config_usage(enum pf_command cmd, FILE *out) { (void)cmd; (void)out; }
