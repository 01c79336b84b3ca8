/* link_main.c — a stand-in for `tile` in the TileLink tool tests: dispatches the
 * subcommands of tools/tile/cli_link.c, so the tests need no libtile. */
#include <stdio.h>
#include <string.h>

int tile_cmd_launch(int argc, char **argv);
int tile_cmd_link_bench(int argc, char **argv);
int tile_cmd_link_topo(int argc, char **argv);
int tile_cmd_store(int argc, char **argv);
int tile_cmd_link_status(int argc, char **argv);

int main(int argc, char **argv) {
    if (argc >= 2) {
        const char *c = argv[1];
        if (!strcmp(c, "launch")) return tile_cmd_launch(argc - 1, argv + 1);
        if (!strcmp(c, "link-bench")) return tile_cmd_link_bench(argc - 1, argv + 1);
        if (!strcmp(c, "link-topo")) return tile_cmd_link_topo(argc - 1, argv + 1);
        if (!strcmp(c, "store")) return tile_cmd_store(argc - 1, argv + 1);
        if (!strcmp(c, "link-status")) return tile_cmd_link_status(argc - 1, argv + 1);
    }
    fprintf(stderr, "usage: %s launch|link-bench|link-topo|store|link-status ...\n", argv[0]);
    return 2;
}
