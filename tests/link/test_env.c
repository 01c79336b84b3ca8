/* test_env.c — launch-environment parsing and its precedence. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlink.h"

static int fails;
#define EXPECT(cond, ...) do { if (!(cond)) { fails++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static const char *vars[] = {"TLINK_RANK", "TLINK_SIZE", "TLINK_LOCAL_RANK", "TLINK_LOCAL_SIZE", "TLINK_STORE",
    "TILE_RANK", "TILE_SIZE", "TILE_STORE", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
    "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_MCA_orte_hnp_uri", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_RANK",
    "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_KVSNAME", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
    "SLURM_LAUNCH_NODE_IPADDR", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID",
    "TLINK_JOB_ID", "TLINK_HOST_ID", "TLINK_HOST_PER_NETNS", "SLURM_NPROCS", "SLURM_NTASKS_PER_NODE", "TILE_WORLD_SIZE",
    "TILE_LOCAL_RANK", "TILE_LOCAL_SIZE"};
static void clear(void) { for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]); }

int main(void) {
    tlink_env_info e;
    clear();
    tlink_env_parse(&e);
    EXPECT(e.rank == -1 && !strcmp(e.source, "none") && !strcmp(e.store_addr, "127.0.0.1:29500"), "empty: %s %s", e.source, e.store_addr);
    tlink_comm *c = (tlink_comm *)1;
    EXPECT(tlink_comm_init_env(&c) == TLINK_ERR_BOOTSTRAP && c == NULL, "init_env without vars");
    EXPECT(strstr(tlink_last_error(NULL), "RANK"), "message mentions the variables: %s", tlink_last_error(NULL));

    /* Slurm */
    setenv("SLURM_PROCID", "5", 1); setenv("SLURM_NTASKS", "8", 1); setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_JOB_NODELIST", "node[07-10],gpu3", 1); setenv("SLURM_JOB_ID", "1234", 1);
    tlink_env_parse(&e);
    EXPECT(e.rank == 5 && e.size == 8 && e.local_rank == 1 && !strcmp(e.source, "slurm"), "slurm");
    EXPECT(!strncmp(e.store_addr, "node07:", 7), "slurm store host from node list: %s", e.store_addr);
    setenv("SLURM_LAUNCH_NODE_IPADDR", "10.1.2.3", 1);
    tlink_env_parse(&e);
    EXPECT(!strncmp(e.store_addr, "10.1.2.3:", 9), "slurm launch node: %s", e.store_addr);
    char port1[16];
    snprintf(port1, sizeof port1, "%s", strchr(e.store_addr, ':') + 1);
    /* PMI beats Slurm */
    setenv("PMI_RANK", "2", 1); setenv("PMI_SIZE", "4", 1); setenv("MPI_LOCALRANKID", "0", 1);
    tlink_env_parse(&e);
    EXPECT(e.rank == 2 && e.size == 4 && e.local_rank == 0 && !strcmp(e.source, "pmi"), "pmi over slurm");
    /* Open MPI beats PMI */
    setenv("OMPI_COMM_WORLD_RANK", "3", 1); setenv("OMPI_COMM_WORLD_SIZE", "6", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1); setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
    setenv("OMPI_MCA_orte_hnp_uri", "1234.0;tcp://192.168.5.4,10.0.0.2:40000", 1);
    tlink_env_parse(&e);
    EXPECT(e.rank == 3 && e.size == 6 && e.local_size == 2 && !strcmp(e.source, "ompi"), "ompi over pmi");
    EXPECT(!strncmp(e.store_addr, "192.168.5.4:", 12), "ompi store from hnp uri: %s", e.store_addr);
    /* torchrun beats Open MPI; MASTER_ADDR/PORT win for the store */
    setenv("RANK", "1", 1); setenv("WORLD_SIZE", "2", 1); setenv("LOCAL_RANK", "1", 1);
    setenv("MASTER_ADDR", "master", 1); setenv("MASTER_PORT", "29999", 1);
    tlink_env_parse(&e);
    EXPECT(e.rank == 1 && e.size == 2 && !strcmp(e.source, "torchrun"), "torchrun over ompi");
    EXPECT(!strcmp(e.store_addr, "master:29999"), "MASTER_ADDR:MASTER_PORT: %s", e.store_addr);
    /* TLINK beats everything */
    setenv("TILE_RANK", "0", 1); setenv("TILE_SIZE", "3", 1);
    tlink_env_parse(&e);
    EXPECT(e.rank == 0 && e.size == 3 && !strcmp(e.source, "tlink"), "TILE_ vars");
    setenv("TLINK_RANK", "2", 1); setenv("TLINK_SIZE", "3", 1); setenv("TLINK_STORE", "h:1", 1);
    tlink_env_parse(&e);
    EXPECT(e.rank == 2 && !strcmp(e.store_addr, "h:1"), "TLINK_ vars and TLINK_STORE");
    /* an incomplete source is skipped */
    clear();
    setenv("RANK", "1", 1); /* no WORLD_SIZE */
    setenv("PMI_RANK", "4", 1); setenv("PMI_SIZE", "5", 1);
    tlink_env_parse(&e);
    EXPECT(e.rank == 4 && !strcmp(e.source, "pmi"), "incomplete torchrun vars skipped");
    /* host identity */
    char id1[200], id2[200];
    tlink_host_identity(id1, sizeof id1);
    setenv("TLINK_HOST_PER_NETNS", "1", 1);
    tlink_host_identity(id2, sizeof id2);
    EXPECT(strchr(id1, '/') && strcmp(id1, id2), "per-netns identity differs: %s %s", id1, id2);
    setenv("TLINK_HOST_ID", "rack1-node3", 1);
    tlink_host_identity(id2, sizeof id2);
    EXPECT(!strcmp(id2, "rack1-node3"), "TLINK_HOST_ID override");
    /* explicit init with bad arguments */
    EXPECT(tlink_comm_init(&c, 3, 2, "127.0.0.1:1") == TLINK_ERR_INVALID_ARG, "rank out of range");
    EXPECT(tlink_comm_init(&c, 0, 1, "nonsense") == TLINK_ERR_INVALID_ARG, "bad store address");
    EXPECT(tlink_allreduce(NULL, NULL, NULL, 0, TLINK_F32, TLINK_SUM) == TLINK_ERR_INVALID_ARG, "NULL comm");
    printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
    return fails ? 1 : 0;
}
