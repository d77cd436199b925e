"""`python -m rill info [--config FILE]`: the report `rill info` prints."""

import argparse
import sys

from . import LibraryNotFoundError, RillError, info_report


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rill")
    commands = parser.add_subparsers(dest="command", required=True)
    info = commands.add_parser("info", help="version, backends with their availability, devices")
    info.add_argument("--config", metavar="FILE", help="TOML config whose [runtime] plugin_dir is searched too")
    args = parser.parse_args(argv)

    try:
        config = None
        if args.config is not None:
            with open(args.config, encoding="utf-8") as f:
                config = f.read()
        sys.stdout.write(info_report(config))
    except (RillError, LibraryNotFoundError, OSError) as exc:
        print("rill: {}".format(exc), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
