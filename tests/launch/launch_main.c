/* launch_main.c — a stand-in for `tile` in the launcher tests: `launch_tool launch ...`
 * runs tlink_launch_main, so the tests need neither libtile nor the rest of libtilelink. */
#include <stdio.h>
#include <string.h>

#include "launch.h"

int main(int argc, char **argv) {
    if (argc >= 2 && !strcmp(argv[1], "launch")) return tlink_launch_main(argc - 1, argv + 1);
    fprintf(stderr, "usage: %s launch [options] -- CMD ARGS\n", argv[0]);
    return 2;
}
