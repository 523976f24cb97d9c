/* Every stage's types at once: the aggregate for main.c and the few places
 * that truly need the whole run (tests that build one).
 *
 *   config -> probe -> discover -> collective -> verdict -> publish
 *
 * Each stage's types are in their own header under types/ (types/run.h
 * holds struct pf_run itself); a module includes only the ones it needs.
 * The transport and the engines never include this file, nor types/run.h
 * (tests/integration/test_layout.sh compiles them without either). */
#ifndef PF_H
#define PF_H

#include "reasons.h"
#include "util/err.h"
#include "util/progress.h"
#include "util/sizes.h"
#include "util/version.h"

#include "types/boot.h"
#include "types/catalog.h"
#include "types/coll.h"
#include "types/config.h"
#include "types/engine.h"
#include "types/node.h"
#include "types/peers.h"
#include "types/publish.h"
#include "types/run.h"
#include "types/verdict.h"

#endif
