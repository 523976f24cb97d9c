#!/usr/bin/env python3
"""Static checks of the Dockerfile, for CI machines without a Docker engine.

  check_dockerfile.py ROOT [DOCKERFILE]

Parses the Dockerfile (line continuations, comments, ARG/FROM/COPY/ADD/RUN
instructions) and checks:
  - the targets `agent`, `full` and `webhook` exist (webhook: the dynamic
    build from webhook-build, the one with the HTTP server);
  - every FROM names a base image through a global ARG with a default, or an
    earlier stage;
  - every COPY/ADD --from=X names an earlier stage;
  - every local file COPY/ADD takes exists in ROOT and is not excluded by
    .dockerignore;
  - every *_VERSION ARG has a pinned default (not empty, not "latest"),
    every non-empty *_SHA256 ARG is 64 hex digits, and every download of a
    pinned source whose checksum ARG is set is verified with sha256sum;
  - the builder's base is an old-glibc image (Debian 11 or Ubuntu 20.04)
    and it runs `make static`, the target whose link check enforces a
    glibc-only binary;
  - the agent image holds /usr/local/bin/efa-preflight (the path the
    copy-in initContainers copy) and the full image puts it on PATH, with
    the MPI shim libpf-mpi.so beside it;
  - a RUN that uses /opt/amazon/ comes after the EFA installer in its stage;
  - DEPS_FROM (upstream | debian: where the builder takes curl, cJSON and
    the libfabric headers) defaults to upstream;
  - the `full` image's CUDA (CUDA_*_IMAGE tags) and NCCL_VERSION drive every
    GPU the chart deploys to: each instanceTypes entry of the chart's
    values.yaml is looked up in agent/catalog.yaml for its GPU model, and
    the model's architecture needs a minimum CUDA and NCCL (B200, sm_100:
    CUDA 12.8, NCCL 2.25); the devel and runtime images share one CUDA.
Prints one line per problem; exit 1 if any.
"""
import fnmatch
import os
import re
import shlex
import sys


def instructions(text):
    """(line, KEYWORD, rest) for each instruction, continuations joined."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue       # comment lines inside a continued instruction
        if not buf:
            start = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.strip().partition(" ")
        out.append((start, word.upper(), rest.strip()))
        buf = ""
    if buf:
        out.append((start, "UNTERMINATED", buf))
    return out


def flags_and_args(rest):
    words = shlex.split(rest)
    flags = {}
    while words and words[0].startswith("--"):
        k, _, v = words.pop(0)[2:].partition("=")
        flags[k] = v
    return flags, words


def dockerignore(root):
    path = os.path.join(root, ".dockerignore")
    if not os.path.exists(path):
        return []
    pats = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                neg = line.startswith("!")
                pats.append((neg, line.lstrip("!").strip("/")))
    return pats


def ignored(rel, pats):
    """Docker's rule: the last pattern matching the path or a parent wins."""
    parts = rel.strip("/").split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    result = False
    for neg, pat in pats:
        if any(fnmatch.fnmatchcase(p, pat) for p in prefixes):
            result = not neg
    return result


# GPU model -> (architecture, first CUDA that compiles for it, first NCCL
# release that supports it).
GPU_ARCH = {
    "V100": ("sm_70", (9, 0), (2, 0)),
    "A100": ("sm_80", (11, 0), (2, 7)),
    "A10G": ("sm_86", (11, 1), (2, 8)),
    "L4": ("sm_89", (11, 8), (2, 15)),
    "L40S": ("sm_89", (11, 8), (2, 15)),
    "H100": ("sm_90", (11, 8), (2, 15)),
    "H200": ("sm_90", (11, 8), (2, 15)),
    "B200": ("sm_100", (12, 8), (2, 25)),
    "B300": ("sm_103", (12, 9), (2, 27)),
}


def version_tuple(text):
    m = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def chart_gpus(root):
    """{instance type: GPU model} for every type the chart deploys to."""
    import yaml
    values = os.path.join(root, "charts", "efa-preflight", "values.yaml")
    catalog = os.path.join(root, "agent", "catalog.yaml")
    if not os.path.exists(values) or not os.path.exists(catalog):
        return None
    with open(values) as f:
        entries = yaml.safe_load(f).get("instanceTypes", [])
    with open(catalog) as f:
        inst = yaml.safe_load(f).get("instances", {})
    out = {}
    for e in entries:
        for t in e.get("instanceTypes", []):
            name = t[3:] if t.startswith("ml.") else t
            out[t] = inst.get(name, {}).get("accelerator_model")
    return out


def check_gpu_stack(root, global_args, problems):
    cudas = {}
    for arg in ("CUDA_DEVEL_IMAGE", "CUDA_RUNTIME_IMAGE"):
        m = re.search(r":(\d+\.\d+)(?:\.\d+)?-", global_args.get(arg) or "")
        if not m:
            problems.append("ARG %s=%s: no CUDA version in the tag" % (arg, global_args.get(arg)))
            return
        cudas[arg] = version_tuple(m.group(1))
    if len(set(cudas.values())) != 1:
        problems.append("CUDA_DEVEL_IMAGE and CUDA_RUNTIME_IMAGE have different CUDA "
                        "versions (%s): aws-ofi-nccl would be built for another CUDA"
                        % ", ".join("%d.%d" % v for v in cudas.values()))
    cuda = cudas["CUDA_RUNTIME_IMAGE"]
    nccl = version_tuple(global_args.get("NCCL_VERSION"))
    if nccl is None:
        problems.append("ARG NCCL_VERSION=%s is not a version" % global_args.get("NCCL_VERSION"))
        return
    gpus = chart_gpus(root)
    if gpus is None:
        return
    for itype, model in sorted(gpus.items()):
        model = (model or "").split("-")[0]      # A100-40GB -> A100
        if model not in GPU_ARCH:
            problems.append("chart instance type %s: GPU %r has no known CUDA/NCCL minimum "
                            "(add it to check_dockerfile.py GPU_ARCH)" % (itype, model))
            continue
        arch, min_cuda, min_nccl = GPU_ARCH[model]
        if cuda < min_cuda:
            problems.append("the full image's CUDA %d.%d cannot drive %s (%s, %s) that the "
                            "chart deploys to: it needs CUDA >= %d.%d"
                            % (cuda + (itype, model, arch) + min_cuda))
        if nccl < min_nccl:
            problems.append("the full image's NCCL %s cannot drive %s (%s, %s) that the "
                            "chart deploys to: it needs NCCL >= %d.%d"
                            % ((global_args["NCCL_VERSION"], itype, model, arch) + min_nccl))


def main():
    root = sys.argv[1]
    dockerfile = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "Dockerfile")
    with open(dockerfile) as f:
        text = f.read()
    problems = []
    ins = instructions(text)
    pats = dockerignore(root)
    global_args = {}
    stages = []          # names in order
    stage_of_line = {}
    seen_from = False
    current = None
    copies = {}          # stage -> [(line, flags, args)]
    runs = {}            # stage -> [run text]
    for line, kw, rest in ins:
        if kw == "UNTERMINATED":
            problems.append("line %d: instruction never ends (trailing backslash)" % line)
        elif kw == "ARG" and not seen_from:
            name, eq, default = rest.partition("=")
            global_args[name.strip()] = default.strip() if eq else None
        elif kw == "FROM":
            seen_from = True
            m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            if not m:
                problems.append("line %d: cannot parse FROM %s" % (line, rest))
                continue
            image, name = m.group(1), m.group(2)
            am = re.fullmatch(r"\$\{?(\w+)\}?", image)
            if am:
                arg = am.group(1)
                if arg not in global_args:
                    problems.append("line %d: FROM uses ARG %s, not declared before "
                                    "the first FROM" % (line, arg))
                elif not global_args[arg]:
                    problems.append("line %d: base image ARG %s has no default" % (line, arg))
            elif image not in stages:
                problems.append("line %d: base image %s is not a build ARG" % (line, image))
            current = name or "stage%d" % len(stages)
            if current in stages:
                problems.append("line %d: stage %s defined twice" % (line, current))
            stages.append(current)
            copies[current], runs[current] = [], []
        elif kw in ("COPY", "ADD"):
            if current is None:
                problems.append("line %d: %s before FROM" % (line, kw))
                continue
            flags, args = flags_and_args(rest)
            copies[current].append((line, flags, args))
            if "from" in flags:
                src_stage = flags["from"]
                if src_stage not in stages[:-1]:
                    problems.append("line %d: COPY --from=%s names no earlier stage "
                                    "(stages: %s)" % (line, src_stage, ", ".join(stages[:-1])))
            else:
                for src in args[:-1]:
                    if "$" in src or "*" in src:
                        problems.append("line %d: COPY source %s is not a plain path" % (line, src))
                        continue
                    if not os.path.exists(os.path.join(root, src)):
                        problems.append("line %d: COPY source %s does not exist" % (line, src))
                    elif ignored(src, pats):
                        problems.append("line %d: COPY source %s is excluded by "
                                        ".dockerignore" % (line, src))
        elif kw == "RUN" and current is not None:
            # /opt/amazon exists only where the EFA installer ran in this stage.
            if "/opt/amazon/" in rest and not any("efa_installer.sh" in r for r in runs[current]):
                problems.append("line %d: RUN uses /opt/amazon/ in stage %s before the EFA "
                                "installer ran there" % (line, current))
            runs[current].append(rest)
    for target in ("agent", "full", "webhook"):
        if target not in stages:
            problems.append("no stage named %s (docker build --target %s)" % (target, target))

    # Pinned versions and checksums.
    for name, default in global_args.items():
        if name.endswith("_VERSION") and (not default or default == "latest"):
            problems.append("ARG %s is not pinned (default %r)" % (name, default))
        if name.endswith("_SHA256") and default and not re.fullmatch(r"[0-9a-f]{64}", default):
            problems.append("ARG %s=%s is not a sha256" % (name, default))
        if name.endswith("_IMAGE") and default and (":" not in default or default.endswith(":latest")):
            problems.append("ARG %s=%s has no pinned tag" % (name, default))
    all_runs = " ".join(r for rs in runs.values() for r in rs)
    for name, default in global_args.items():
        if name.endswith("_SHA256") and default:
            if not re.search(r'echo "\$\{%s\}  [^"]+" \| sha256sum -c' % name, all_runs):
                problems.append("ARG %s is set but no RUN checks it with sha256sum -c" % name)

    # The glibc baseline and the static binary.
    builder = global_args.get("BUILDER_IMAGE") or ""
    if not re.match(r"(debian:bullseye|debian:11|ubuntu:20\.04)", builder):
        problems.append("BUILDER_IMAGE=%s is not an old-glibc base (Debian 11 or "
                        "Ubuntu 20.04): the binary's glibc baseline would rise" % builder)
    if "builder" in runs and not any(re.search(r"\bmake static\b", r) for r in runs["builder"]):
        problems.append("the builder stage does not run `make static`")
    for target, dest in (("agent", "/usr/local/bin/efa-preflight"),
                         ("full", "/usr/local/bin/efa-preflight")):
        got = [a[-1] for _, fl, a in copies.get(target, []) if fl.get("from") == "builder"]
        if dest not in got:
            problems.append("stage %s does not put the agent at %s (copies to %s)"
                            % (target, dest, got))

    # The webhook serves HTTPS: its binary is the dynamic build (the static
    # one has no server).
    got = [(fl.get("from"), a[-1]) for _, fl, a in copies.get("webhook", [])]
    if ("webhook-build", "/usr/local/bin/efa-preflight") not in got:
        problems.append("stage webhook does not put the webhook-build binary at "
                        "/usr/local/bin/efa-preflight (copies %s)" % got)
    if "webhook-build" in runs and not any(re.search(r"\bmake\b(?! static)", r) for r in runs["webhook-build"]):
        problems.append("the webhook-build stage does not run `make` (the build with the HTTP server)")

    got = [a[-1] for _, fl, a in copies.get("full", []) if "libpf-mpi.so" in " ".join(a)]
    if "/usr/local/bin/libpf-mpi.so" not in got:
        problems.append("stage full does not put the MPI shim at /usr/local/bin/libpf-mpi.so "
                        "(copies to %s)" % got)

    check_gpu_stack(root, global_args, problems)
    # DEPS_FROM=debian is for builders without upstream access; the image
    # others build must keep the pinned, checksummed tarballs.
    if global_args.get("DEPS_FROM") != "upstream":
        problems.append("ARG DEPS_FROM=%s: the default must stay upstream (the pinned, "
                        "checksummed tarballs)" % global_args.get("DEPS_FROM"))
    elif "builder" in runs and not any("DEPS_FROM" in r for r in runs["builder"]):
        problems.append("the builder stage never reads DEPS_FROM")

    for p in problems:
        print("FAIL " + p)
    print("Dockerfile: %d instructions, stages %s, %d problems"
          % (len(ins), " ".join(stages), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
