/* topo_test.c — topology files: write/read round trips, error messages with file:line,
 * validation, detection without a CUDA driver, and cost predictions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"

static int fails;
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fails++;                                                       \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);         \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

static char *to_text(const tlink_topo *t) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tlink_topo_write(t, f);
    fclose(f);
    return buf;
}

/* write -> parse -> write gives the same text */
static void round_trip(const char *what, const tlink_topo *t) {
    char err[512] = "";
    char *a = to_text(t);
    tlink_topo *u = NULL;
    tlink_status st = tlink_topo_parse(what, a, &u, err, sizeof err);
    CHECK(st == TLINK_OK, "%s: re-reading failed: %s", what, err);
    if (u) {
        char *b = to_text(u);
        CHECK(!strcmp(a, b), "%s: round trip differs:\n--- first\n%s--- second\n%s", what, a, b);
        CHECK(u->nranks == t->nranks && u->nhosts == t->nhosts, "%s: counts", what);
        free(b);
        tlink_topo_free(u);
    }
    free(a);
}

static void expect_error(const char *text, const char *want) {
    char err[512] = "";
    tlink_topo *t = NULL;
    tlink_status st = tlink_topo_parse("bad.topo", text, &t, err, sizeof err);
    CHECK(st != TLINK_OK && t == NULL, "accepted: %s", text);
    CHECK(strstr(err, want) != NULL, "message '%s' lacks '%s'", err, want);
    tlink_topo_free(t);
}

#define HDR "topology 1\n"

int main(void) {
    char err[512];
    tlink_topo *t = NULL;

    /* ---- synthetic clusters ---- */
    CHECK(tlink_topo_synthetic(16, 8, 2, 8, &t) == TLINK_OK, "synthetic");
    if (t) {
        CHECK(t->nranks == 128 && t->nhosts == 16, "16x8");
        CHECK(t->hosts[3].ranks[0] == 24 && t->hosts[15].ranks[7] == 127, "rank layout");
        CHECK(!strcmp(t->hosts[15].name, "node015"), "name %s", t->hosts[15].name);
        CHECK(tlink_topo_validate(t, err, sizeof err) == TLINK_OK, "valid: %s", err);
        round_trip("synthetic", t);

        tlink_topo_cost c[TLINK_ALGO_COUNT];
        tlink_algo best = TLINK_ALGO_AUTO;
        int n = tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 1 << 20, c, TLINK_ALGO_COUNT, &best);
        CHECK(n >= 5, "allreduce algorithms: %d", n);
        int has_hier = 0, has_best = 0;
        double best_us = 1e300, chosen_us = -1;
        for (int i = 0; i < n && i < TLINK_ALGO_COUNT; i++) {
            CHECK(c[i].us > 0, "%s predicted %g", tlink_algo_name(c[i].algo), c[i].us);
            has_hier |= c[i].algo == TLINK_ALGO_HIERARCHICAL;
            if (c[i].algo == best) { has_best = 1; chosen_us = c[i].us; }
            if (c[i].us < best_us) best_us = c[i].us;
        }
        CHECK(has_hier, "hierarchical is a candidate on 16 hosts");
        CHECK(has_best && chosen_us == best_us, "the choice (%s) is the cheapest", tlink_algo_name(best));
        /* bigger messages cost more; a slower network costs more */
        tlink_topo_cost big[TLINK_ALGO_COUNT];
        tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 64 << 20, big, TLINK_ALGO_COUNT, NULL);
        CHECK(big[0].us > c[0].us, "64 MiB slower than 1 MiB");
        tlink_topo_set_cost(t, TLINK_TRANSPORT_TCP, 100e-6, 1e-9);
        tlink_topo_cost slow[TLINK_ALGO_COUNT];
        tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 1 << 20, slow, TLINK_ALGO_COUNT, NULL);
        CHECK(slow[0].us > c[0].us, "slower tcp: %g vs %g", slow[0].us, c[0].us);
        n = tlink_topo_predict(t, TLINK_COLL_BROADCAST, 8, c, TLINK_ALGO_COUNT, &best);
        CHECK(n >= 2 && (best == TLINK_ALGO_BINOMIAL_TREE || best == TLINK_ALGO_RING || best == TLINK_ALGO_DOUBLE_BINARY_TREE),
              "broadcast: %d, %s", n, tlink_algo_name(best));
        CHECK(tlink_topo_predict(t, (tlink_coll)99, 8, c, 4, NULL) == -1, "bad collective");
        tlink_topo_free(t);
    }
    CHECK(tlink_topo_synthetic(0, 8, 1, 0, &t) == TLINK_ERR_INVALID_ARG, "0 hosts");

    /* ---- a host with more ranks than cores: the model's oversubscription terms ---- */
    {
        static const char *cores[3] = {" cores 2", " cores 8", ""};
        tlink_topo_cost oc[3][TLINK_ALGO_COUNT];
        int on[3] = {0, 0, 0};
        for (int v = 0; v < 3; v++) {
            char text[200];
            snprintf(text, sizeof text, HDR "cost shm alpha_us=1 beta_gbps=4\nhost a ranks 0-7%s\n", cores[v]);
            t = NULL;
            CHECK(tlink_topo_parse("over.topo", text, &t, err, sizeof err) == TLINK_OK, "over.topo: %s", err);
            if (t) on[v] = tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 1 << 20, oc[v], TLINK_ALGO_COUNT, NULL);
            tlink_topo_free(t);
        }
        CHECK(on[0] >= 5 && on[0] == on[1] && on[1] == on[2], "algorithm counts %d %d %d", on[0], on[1], on[2]);
        for (int i = 0; i < on[0] && i < TLINK_ALGO_COUNT; i++) {
            /* 4 ranks per core: every algorithm costs more (copies x4, each step waits for
             * peers queued on a core); unknown cores: no oversubscription term */
            CHECK(oc[0][i].us > 1.5 * oc[1][i].us, "%s: 2 cores %g us, 8 cores %g us", tlink_algo_name(oc[0][i].algo),
                  oc[0][i].us, oc[1][i].us);
            CHECK(oc[2][i].us == oc[1][i].us, "%s: unknown cores %g us, 8 cores %g us", tlink_algo_name(oc[2][i].algo),
                  oc[2][i].us, oc[1][i].us);
        }
    }

    /* ---- a file with every directive ---- */
    const char *full =
        "# a small cluster\n"
        HDR
        "ranks 6\n"
        "cost shm alpha_us=1.5 beta_gbps=8\n"
        "cost tcp alpha_us 25 beta_gbps 10   # both spellings\n"
        "reduce gbps=6\n"
        "host a ranks 0-1,4 cores 16 numa 2 gpus 2 id \"a/0001\" cpu \"Some CPU @ 3GHz\"\n"
        "numa a 0 cpus 0-7 mem_mb 1000\n"
        "numa a 1 cpus 8-15 mem_mb 1000\n"
        "gpu a 0 pci 0000:17:00.0 numa 0 mem_mb 80000 name \"GPU \\\"X\\\"\"\n"
        "gpu a 1 pci 0000:18:00.0 numa 1 mem_mb 80000 name \"GPU Y\"\n"
        "gpulink a 0 1 access 1 perf 0 atomics 1\n"
        "host \"b c\" ranks 2-3,5\n"
        "link a \"b c\" tcp alpha_us=40 beta_gbps=5\n";
    t = NULL;
    CHECK(tlink_topo_parse("full.topo", full, &t, err, sizeof err) == TLINK_OK, "full: %s", err);
    if (t) {
        CHECK(t->nranks == 6 && t->nhosts == 2, "full counts");
        CHECK(t->hosts[0].nranks == 3 && t->hosts[0].ranks[2] == 4, "rank list");
        CHECK(!strcmp(t->hosts[1].name, "b c"), "quoted name");
        CHECK(!strcmp(t->hosts[0].gpus[0].name, "GPU \"X\""), "escaped name '%s'", t->hosts[0].gpus[0].name);
        CHECK(t->hosts[0].numa[1].ncpus == 8, "numa cpus");
        CHECK(t->alpha_s[TLINK_TRANSPORT_TCP] > 24.9e-6 && t->alpha_s[TLINK_TRANSPORT_TCP] < 25.1e-6, "tcp alpha");
        CHECK(t->nlinks == 1 && t->links[0].b == 1, "link");
        round_trip("full", t);
        /* the 40 us link is slower than the 25 us default: the prediction uses it */
        tlink_topo_cost c1[TLINK_ALGO_COUNT], c2[TLINK_ALGO_COUNT];
        tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 8, c1, TLINK_ALGO_COUNT, NULL);
        t->nlinks = 0;
        tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 8, c2, TLINK_ALGO_COUNT, NULL);
        CHECK(c1[0].us > c2[0].us, "slow link counts: %g vs %g", c1[0].us, c2[0].us);
        t->nlinks = 1;
        tlink_topo_free(t);
    }

    /* ---- files on disk ---- */
    CHECK(tlink_topo_read("/nonexistent/x.topo", &t, err, sizeof err) == TLINK_ERR_SYSTEM, "missing file");
    CHECK(strstr(err, "/nonexistent/x.topo: error: cannot open") != NULL, "missing file message: %s", err);

    /* ---- errors: file:line and a useful message ---- */
    expect_error("", "bad.topo: error: empty topology");
    expect_error("# only a comment\n", "empty topology");
    expect_error("host a ranks 0\n", "bad.topo:1: error: the file must start with 'topology 1'");
    expect_error(HDR "topology 1\n", "bad.topo:2: error: 'topology' given twice");
    expect_error("topology 7\n", "bad.topo:1: error: topology version 7 is not supported");
    expect_error(HDR "hots a ranks 0\n", "bad.topo:2: error: unknown directive 'hots'");
    expect_error(HDR "host a\n", "bad.topo:2: error: host 'a' needs 'ranks LIST'");
    expect_error(HDR "host a ranks 0-\n", "bad.topo:2: error: ranks: expected a list");
    expect_error(HDR "host a ranks 3-1\n", "ranks: expected a list");
    expect_error(HDR "host a ranks 0 cores x\n", "bad.topo:2: error: cores: expected an integer");
    expect_error(HDR "host a ranks 0 colour 3\n", "unknown host attribute 'colour'");
    expect_error(HDR "host a ranks 0 cores\n", "'cores' needs a value");
    expect_error(HDR "host a ranks 0\nhost a ranks 1\n", "bad.topo:3: error: host 'a' is declared twice");
    expect_error(HDR "host a ranks 0-1\nhost b ranks 1-2\n", "bad.topo:3: error: rank 1 is on host 'a' and on host 'b'");
    expect_error(HDR "host a ranks 0-1,1\n", "bad.topo:2: error: host 'a': rank 1 is listed twice");
    expect_error(HDR "ranks 4\nhost a ranks 0-2\n", "bad.topo:2: error: rank 3 of 4 is on no host");
    expect_error(HDR "ranks 2\nhost a ranks 0-2\n", "bad.topo:3: error: host 'a': rank 2 is outside 0..1");
    expect_error(HDR "host a ranks 1\n", "rank 0 of 2 is on no host");
    expect_error(HDR "numa a 0 cpus 0-3\n", "bad.topo:2: error: unknown host 'a'");
    expect_error(HDR "host a ranks 0 numa 1\nnuma a 0 cpus 0-3\nnuma a 1 cpus 4-7\n",
                 "bad.topo:4: error: host 'a' declares numa 1");
    expect_error(HDR "host a ranks 0 gpus 2\ngpu a 1\n", "bad.topo:3: error: host 'a': GPUs must be listed in order");
    expect_error(HDR "host a ranks 0 gpus 2\ngpulink a 0 0\n", "a GPU link needs two different GPUs");
    expect_error(HDR "host a ranks 0 gpus 2\ngpulink a 0 5\n", "gpu: expected an integer in 0..1");
    expect_error(HDR "host a ranks 0\nhost b ranks 1\nlink a b tcp alpha_us=1\n",
                 "bad.topo:4: error: needs both alpha_us=... and beta_gbps=...");
    expect_error(HDR "host a ranks 0\nhost b ranks 1\nlink a b tcp alpha_us=1 beta_gbps=0\n",
                 "beta_gbps: expected a positive number");
    expect_error(HDR "host a ranks 0\nhost b ranks 1\nlink a b ib alpha_us=1 beta_gbps=1\n",
                 "unknown transport 'ib'");
    expect_error(HDR "host a ranks 0\nlink a a tcp alpha_us=1 beta_gbps=1\n", "a link joins two different hosts");
    expect_error(HDR "host a ranks 0\nhost b ranks 1\nlink a b tcp alpha_us=1 beta_gbps=1\nlink b a tcp alpha_us=1 beta_gbps=1\n",
                 "bad.topo:5: error: link b-a is given twice");
    expect_error(HDR "cost shm alpha_us=-1 beta_gbps=1\n", "alpha_us: expected a number >= 0");
    expect_error(HDR "reduce gbps=fast\n", "reduce gbps: expected a positive number");
    expect_error(HDR "host \"a ranks 0\n", "bad.topo:2: error: unterminated string");
    expect_error(HDR "host a ranks= 0\n", "'ranks=' needs a value");
    expect_error(HDR "host a\"b ranks 0\n", "unexpected '\"'");

    /* ---- validation of a hand-built topology ---- */
    CHECK(tlink_topo_synthetic(2, 2, 1, 0, &t) == TLINK_OK, "synthetic 2x2");
    if (t) {
        t->hosts[1].ranks[1] = 1; /* rank 1 twice, rank 3 nowhere */
        CHECK(tlink_topo_validate(t, err, sizeof err) != TLINK_OK && strstr(err, "rank 1 is on host 'node000' and on host 'node001'"),
              "validate: %s", err);
        tlink_topo_free(t);
    }

    /* ---- this machine ---- */
    setenv("TLINK_CUDA_LIBRARY", "libtile-no-such-cuda.so.1", 1); /* the no-driver path, always */
    CHECK(tlink_topo_detect(&t) == TLINK_OK, "detect");
    if (t) {
        CHECK(t->nhosts == 1 && t->nranks >= 1, "detect counts");
        CHECK(t->hosts[0].ncores >= 1, "cores %d", t->hosts[0].ncores);
        CHECK(t->hosts[0].nnuma >= 1 && t->hosts[0].numa[0].ncpus >= 1, "numa");
        CHECK(t->hosts[0].ngpus == 0, "no GPU without a driver");
        CHECK(t->hosts[0].id[0] && t->hosts[0].name[0], "identity");
        CHECK(tlink_topo_validate(t, err, sizeof err) == TLINK_OK, "detected topology valid: %s", err);
        round_trip("detected", t);
        tlink_topo_free(t);
    }

    printf("%d failure(s)\n", fails);
    return fails ? 1 : 0;
}
