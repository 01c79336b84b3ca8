/* mpi_allreduce.c — MPI_Allreduce benchmark printing the same table as `tile link-bench`
 * (bench/link/run.sh compares the two). Build: mpicc -O2 -o mpi_allreduce mpi_allreduce.c -lm
 *
 * usage: mpirun -n N mpi_allreduce [-b MIN] [-e MAX] [-f FACTOR] [-w WARMUP] [-i ITERS]
 * f32 sum, out of place; time = the slowest rank's mean per call; algbw = size / time;
 * busbw = algbw * 2(n-1)/n (nccl-tests); #wrong counts elements that differ from the
 * expected sums (every value is a small integer, so the sums are exact). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long parse_size(const char *s) {
    char *e;
    double v = strtod(s, &e);
    double m = 1;
    if (*e == 'k' || *e == 'K') m = 1024.0, e++;
    else if (*e == 'm' || *e == 'M') m = 1024.0 * 1024, e++;
    else if (*e == 'g' || *e == 'G') m = 1024.0 * 1024 * 1024, e++;
    if (e == s || *e || v < 0) return -1;
    return (long long)(v * m);
}

static float val(int r, size_t i) { return (float)(((size_t)r * 3 + i) % 5); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    long long b0 = 8, b1 = 32LL << 20;
    double f = 2;
    int warm = 5, iters = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "-b")) b0 = parse_size(v);
        else if (!strcmp(a, "-e")) b1 = parse_size(v);
        else if (!strcmp(a, "-f")) f = atof(v);
        else if (!strcmp(a, "-w")) warm = atoi(v);
        else if (!strcmp(a, "-i")) iters = atoi(v);
        else {
            if (rank == 0) fprintf(stderr, "mpi_allreduce: unknown option %s\n", a);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (b0 < 0 || b1 < b0 || !(f >= 1) || iters < 1 || warm < 0) {
        if (rank == 0) fprintf(stderr, "mpi_allreduce: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t maxc = (size_t)b1 / sizeof(float);
    float *s = malloc(maxc * sizeof(float) + 64), *r = malloc(maxc * sizeof(float) + 64);
    if (!s || !r) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t i = 0; i < maxc; i++) s[i] = val(rank, i);
    memset(r, 0, maxc * sizeof(float) + 64);
    if (rank == 0) {
        int len = 0;
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        MPI_Get_library_version(lib, &len);
        char *nl = strchr(lib, '\n');
        if (nl) *nl = 0;
        printf("# mpi_allreduce: %d ranks, f32 sum, out of place, warmup %d, iters %d; %s\n", n, warm, iters, lib);
        printf("# %12s %12s %8s %6s %5s %10s %9s %9s %8s\n", "size", "count", "type", "redop", "root", "time", "algbw",
               "busbw", "#wrong");
        printf("# %12s %12s %8s %6s %5s %10s %9s %9s %8s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    long long total_wrong = 0;
    for (long long bytes = b0; bytes <= b1;) {
        int cnt = (int)((size_t)bytes / sizeof(float));
        for (int i = 0; i < warm; i++) MPI_Allreduce(s, r, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++) MPI_Allreduce(s, r, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double dt = (MPI_Wtime() - t0) / iters, tmax;
        long long wrong = 0, w;
        for (int i = 0; i < cnt; i++) {
            double want = 0;
            for (int q = 0; q < n; q++) want += val(q, (size_t)i);
            wrong += fabs(r[i] - want) > 1e-6 * (want > 1 ? want : 1);
        }
        MPI_Reduce(&dt, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&wrong, &w, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double us = tmax * 1e6, eff = (double)cnt * sizeof(float);
            double algbw = us > 0 ? eff / (us * 1e3) : 0;
            printf("  %12lld %12d %8s %6s %5d %10.2f %9.3f %9.3f %8lld\n", (long long)eff, cnt, "f32", "sum", -1, us,
                   algbw, algbw * 2.0 * (n - 1) / n, w);
            fflush(stdout);
            total_wrong += w;
        }
        long long nb = (long long)((double)bytes * f);
        if (f <= 1 || nb <= bytes) break;
        bytes = nb;
    }
    if (rank == 0) printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    free(s);
    free(r);
    MPI_Finalize();
    return total_wrong ? 1 : 0;
}
