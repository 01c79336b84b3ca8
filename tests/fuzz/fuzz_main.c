/* A stand-in for `tile fuzz` until tools/tile/main.c dispatches to tile_cmd_fuzz:
 *   tile-fuzz fuzz --seconds N ...   (argv[1] = "fuzz", as in the real CLI) */
#include <stdio.h>
#include <string.h>

int tile_cmd_fuzz(int argc, char **argv);

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "fuzz")) {
        fprintf(stderr, "usage: %s fuzz [options]\n", argv[0]);
        return 1;
    }
    return tile_cmd_fuzz(argc - 1, argv + 1);
}
