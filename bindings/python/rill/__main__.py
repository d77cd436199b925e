"""`python -m rill COMMAND ...`, and the `rill` command that installing the
package adds. `info [--config FILE]` is answered by the binding: the report
`rill info` prints. Every other command (generate, run, tokenize, logits,
bench, demo, --help) runs the rill tool, found in the package folder (a wheel
carries it beside librill), else at the path in the RILL_TOOL environment
variable; its exit status is the command's."""

import argparse
import os
import subprocess
import sys

from . import LibraryNotFoundError, RillError, info_report
from ._library import PACKAGE_DIR

TOOL_NAME = "rill.exe" if sys.platform == "win32" else "rill"


def info_main(argv):
    parser = argparse.ArgumentParser(prog="python -m rill info",
                                     description="version, backends with their availability, devices")
    parser.add_argument("--config", metavar="FILE", help="TOML config whose [runtime] plugin_dir is searched too")
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


def find_tool():
    """(path of the rill tool or None, [what was tried and why it failed])."""
    tried = []
    candidates = [("package folder", os.path.join(PACKAGE_DIR, TOOL_NAME))]
    env = os.environ.get("RILL_TOOL")
    if env:
        candidates.append(("RILL_TOOL", env))
    else:
        tried.append("RILL_TOOL: not set")
    for label, path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, tried
        tried.append("{} ({}): {}".format(path, label, "not executable" if os.path.isfile(path) else "no such file"))
    return None, tried


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["info"]:
        return info_main(argv[1:])
    tool, tried = find_tool()
    if tool is None:
        print("rill: the rill tool, which runs every command but info, was not found; tried:\n  {}\n"
              "Install the package with pip (it carries the tool) or set RILL_TOOL to the rill executable."
              .format("\n  ".join(tried)), file=sys.stderr)
        return 1
    try:
        status = subprocess.call([tool] + argv)
    except KeyboardInterrupt:
        return 130
    return 128 - status if status < 0 else status  # killed by signal N: 128 + N, as a shell reports it


if __name__ == "__main__":
    sys.exit(main())
