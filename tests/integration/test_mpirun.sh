#!/bin/bash
# --bootstrap mpi under OpenMPI's mpirun: 4 ranks (oversubscribed, TCP only,
# the fabric on loopback)
# find each other through the dlopened shim (build/libpf-mpi.so), agree on
# one run id, and pass with 0 wrong and 4 ranks in every report. The agent
# itself must not link libmpi.
. "$(dirname "$0")/lib_test.sh"
build=${BUILD:-build}
shim=$(dirname "$bin")/libpf-mpi.so
fail() { echo "FAIL $*"; tail -n 30 "$tmp/out"; exit 1; }

command -v mpirun >/dev/null || { echo "skip: mpirun is not installed"; exit 77; }
[ -e "$shim" ] || { echo "skip: $shim not built (no mpicc when make ran)"; exit 77; }
if ldd "$bin" | grep -q libmpi; then
    fail "$bin links libmpi; it must only dlopen the shim"
fi
echo "ok   $bin does not link libmpi"

# Under `make asan`, LeakSanitizer would report OpenMPI's own allocations
# (MCA components unloaded at MPI_Finalize) and fail every rank; the agent's
# own leaks are checked by the other tests.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
timeout -k 5 90 mpirun -np 4 --oversubscribe --allow-run-as-root \
    --mca btl tcp,self \
    sh -c 'exec "$0" run --bootstrap mpi --fabric-provider tcp --no-imds \
        --bind-addr 127.0.0.1 --timeout 60 -e 1M -n 5 -w 2 --log-level info \
        --report "$1/r$OMPI_COMM_WORLD_RANK.json"' "$bin" "$tmp" \
    >"$tmp/out" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "mpirun exited $rc"
ids=""
for r in 0 1 2 3; do
    j="$tmp/r$r.json"
    [ -s "$j" ] || fail "rank $r wrote no report"
    got=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); c=r['collective']; print(r['verdict']['exit_code'], c['nranks'], c['wrong_total'], c['error'], len(c['rows']))" "$j")
    [ "$got" = "0 4 0 None 18" ] ||
        fail "rank $r: exit_code nranks wrong error rows = '$got', want '0 4 0 None 18'"
done
n=$(grep -o 'mpi: rank [0-3] of 4 on [^ ]* (shim [^,]*, run mpi-[0-9a-f]*)' "$tmp/out" |
    sed 's/.*run //' | sort -u | wc -l)
[ "$n" -eq 1 ] || fail "ranks did not agree on one run id ($n distinct)"
[ "$(grep -c 'mpi: rank [0-3] of 4' "$tmp/out")" -eq 4 ] || fail "not every rank logged its MPI rank"
echo "ok   mpirun -np 4: every rank passes with 0 wrong, one run id"

# Without the shim, --bootstrap mpi is a setup error that says what to build.
out=$(EFA_PREFLIGHT_MPI_SHIM=/nonexistent/libpf-mpi.so "$bin" run --bootstrap mpi \
    --no-imds --fabric-provider tcp 2>&1)
rc=$?
[ $rc -eq 2 ] || fail "missing shim exited $rc, want 2: $out"
grep -q -- "--bootstrap mpi needs the MPI shim (make builds build/libpf-mpi.so when mpicc exists): tried /nonexistent/libpf-mpi.so" <<<"$out" ||
    fail "missing shim not explained: $out"
echo "ok   missing shim: exit 2, names what to build"
