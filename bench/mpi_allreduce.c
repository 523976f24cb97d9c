/* The host benchmark's reference: MPI_Allreduce of float32 sums, timed the
 * way the agent's sweep times its engines (warm-up, barrier, iters back to
 * back, per-op time averaged over ranks, busbw = bytes/t x 2(n-1)/n).
 *
 *   mpirun -np N ... mpi_allreduce MIN_BYTES MAX_BYTES ITERS WARMUP
 *
 * Prints one line per size: "bytes busbw_gbps", then "rss_kib MAX" (the
 * largest peak RSS of any rank). Built with mpicc by mk/bench_host.mk. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

int main(int argc, char **argv)
{
    unsigned long long min_bytes, max_bytes;
    int iters, warmup, rank, n;
    float *send, *recv;
    struct rusage ru;
    long rss, max_rss;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 5) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce MIN MAX ITERS WARMUP\n");
        MPI_Finalize();
        return 2;
    }
    min_bytes = strtoull(argv[1], NULL, 0);
    max_bytes = strtoull(argv[2], NULL, 0);
    iters = atoi(argv[3]);
    warmup = atoi(argv[4]);
    send = malloc(max_bytes);
    recv = malloc(max_bytes);
    if (!send || !recv || iters < 1 || min_bytes < 4) {
        fprintf(stderr, "mpi_allreduce: bad arguments or out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (unsigned long long i = 0; i < max_bytes / 4; i++)
        send[i] = (float)((i * 7 + (unsigned long long)rank * 13) % 31) - 15;

    for (unsigned long long b = min_bytes; b <= max_bytes; b *= 2) {
        int count = (int)(b / 4);
        double t, sum;
        for (int w = 0; w < warmup; w++)
            MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM,
                          MPI_COMM_WORLD);
        t = (MPI_Wtime() - t) / iters;
        MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t = sum / n;
        if (rank == 0)
            printf("%llu %.4f\n", b,
                   (double)b / t / 1e9 * (n > 1 ? 2.0 * (n - 1) / n : 1.0));
        fflush(stdout);
    }
    getrusage(RUSAGE_SELF, &ru);
    rss = ru.ru_maxrss;
    MPI_Reduce(&rss, &max_rss, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("rss_kib %ld\n", max_rss);
    free(send);
    free(recv);
    MPI_Finalize();
    return 0;
}
