import sys

try:
    from patchkit.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line itself loads: the same one line as later
    print("patchkit: interrupted", file=sys.stderr)
    sys.exit(130)

main()
