/* launch.h — `tile launch`: start N ranks of a command with the torchrun conventions.
 *
 * In:  a rank count, optionally a host list "H1:n1,H2:n2" (with --netns the host names are
 *      Linux network namespaces, as made by scripts/netns.sh), and a command line.
 * Out: the ranks' exit status folded into one: 0 when every rank exited 0, otherwise the
 *      status of the first rank that failed (128+signal when it was killed by a signal).
 *
 * Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, NODE_RANK,
 * MASTER_ADDR, MASTER_PORT (a free port unless one is given) and TLINK_LAUNCH_HOST (the name
 * of its host in --hosts, or the local host name); with --netns also TLINK_HOST_PER_NETNS=1,
 * so libtilelink treats each namespace as a host of its own. Rank-identifying variables of other
 * launchers (OMPI_COMM_WORLD_*, PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, SLURM_PROCID,
 * SLURM_NTASKS, SLURM_LOCALID) are removed, so a `tile launch` run inside an allocation of
 * another launcher is not misread. Every line a rank writes to stdout/stderr is written by
 * the launcher to its own stdout/stderr prefixed with "[rank] ". SIGINT, SIGTERM and SIGHUP
 * are forwarded to every rank (each rank is its own process group, so its children get
 * them too); when one rank fails the others get SIGTERM, and SIGKILL after a grace period —
 * unless max_restarts allows restarting it (elastic: the same rank is started again with
 * TLINK_RESTART_COUNT set, the others keep running) or keep_going is set (the others keep
 * running). In both modes the launcher hosts the store on MASTER_PORT (not with netns).
 *
 * This file is part of libtilelink and does not depend on libtile.
 */
#ifndef TLINK_LAUNCH_H
#define TLINK_LAUNCH_H

#ifndef TLINK_API
#define TLINK_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tlink_launch_options {
    int nranks;               /* -n; 0 = the sum of the host list's counts */
    const char *hosts;        /* "H1:n1,H2:n2" or NULL (all ranks on this host) */
    int netns;                /* host names are network namespaces: run ranks inside them */
    const char *master_addr;  /* NULL: 127.0.0.1, or host 0's first IPv4 address with netns */
    int master_port;          /* 0: pick a free port (in host 0's namespace) */
    int prefix;               /* prefix output lines with "[rank] " (default 1) */
    double grace_s;           /* SIGTERM -> SIGKILL delay (default 3) */
    double timeout_s;         /* kill everything after this long; 0 = no limit. Exit 124. */
    int max_restarts;         /* elastic: restart failed ranks, this many restarts in all (0: none);
                                 with K > 0 the launcher hosts the store (not with netns) */
    int keep_going;           /* a failed rank does not stop the others (the launcher hosts the
                                 store, not with netns); the exit status is still the first
                                 failure's */
    int verbose;              /* print what is started */
    int no_secret;            /* do not generate TLINK_SECRET for the ranks when none is set */
    char *const *argv;        /* the command, NULL-terminated */
} tlink_launch_options;

TLINK_API void tlink_launch_options_init(tlink_launch_options *o);

/* Runs the ranks and waits for them. Returns the folded exit status (0..255); on a usage
 * or setup error prints "tile launch: error: ..." to stderr and returns 2 before starting
 * anything. */
TLINK_API int tlink_launch_run(const tlink_launch_options *o);

/* The command line: argv[0] is the subcommand name ("launch"). Returns the exit status. */
TLINK_API int tlink_launch_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
