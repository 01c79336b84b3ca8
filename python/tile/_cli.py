"""The `tile` console script: runs the CLI binary this package carries."""
import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    exe = os.path.join(here, "bin", "tile")
    if not os.path.exists(exe):
        root = os.path.dirname(os.path.dirname(here))
        exe = os.path.join(root, "build", "bin", "tile")
    if not os.path.exists(exe):
        sys.stderr.write("tile: the CLI binary is not in this installation (%s)\n" % exe)
        return 127
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
