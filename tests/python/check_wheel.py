"""Builds the Python wheel from the repository root with pip (scikit-build-core
from PyPI), installs it into a fresh venv and uses it there with nothing else
on hand: no RILL_LIBRARY, RILL_TOOL, PYTHONPATH or LD_LIBRARY_PATH, and the
working folder outside the source tree.

Checks: the wheel's files (librill once, the plugins expected, the tool
executable); the binding loads the librill of its own package folder even with
RILL_LIBRARY pointing elsewhere; `python -m rill info` reports the wheel's
version and finds its plugins beside librill; `python -m rill generate` with
the demo model prints what this build tree's rill tool prints, and the
binding's LanguageModel.generate_ids gives the same ids. What the generated text must
be is checked against transformers by tests/generate; this test checks that
the wheel carries that same runtime, whole.

Exit 77 (skipped) when PyPI cannot be reached: pip needs scikit-build-core
and numpy from it. The build folder is kept under --work, so a second run
rebuilds only what changed.
"""

import argparse
import os
import shutil
import stat
import subprocess
import sys
import time
import zipfile

SKIPPED = 77
PROMPT = "A fool and his money"


def run(cmd, env=None, cwd=None):
    result = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("failed ({}): {}\n{}\n{}".format(result.returncode, " ".join(cmd), result.stdout, result.stderr))
    return result.stdout


def clean_env(**extra):
    """The environment of a user who has only the venv: no way to a librill, tool or plugin outside it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RILL_LIBRARY", "RILL_TOOL", "RILL_PLUGIN_PATH", "PYTHONPATH", "LD_LIBRARY_PATH",
                        "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def check(condition, message):
    if not condition:
        sys.exit("check failed: " + message)


def check_wheel_files(wheel, plugins):
    with zipfile.ZipFile(wheel) as archive:
        infos = {info.filename: info for info in archive.infolist()}
    names = sorted(infos)
    print("wheel: {} ({:.1f} MB): {}".format(os.path.basename(wheel), os.path.getsize(wheel) / 1e6,
                                             ", ".join(n for n in names if not n.endswith(".py"))))
    libraries = [n for n in names if n.startswith("rill/librill.so")]
    check(libraries == ["rill/librill.so.0"], "expected librill once, as rill/librill.so.0; got {}".format(libraries))
    for plugin in plugins:
        check("rill/librill-{}.so".format(plugin) in infos, "rill/librill-{}.so missing".format(plugin))
    tool = infos.get("rill/rill")
    check(tool is not None, "the rill tool (rill/rill) is missing")
    check(tool.external_attr >> 16 & stat.S_IXUSR, "rill/rill is not executable in the wheel")
    check("rill/__main__.py" in infos and "rill/_library.py" in infos, "the binding's modules are missing")
    check(not any(n.startswith(("include/", "rill/include")) or n.endswith((".h", ".cmake", ".pc")) for n in names),
          "the wheel holds files of a system install: {}".format(names))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source", required=True, help="the repository root (pyproject.toml)")
    parser.add_argument("--work", required=True, help="folder for the venv, the wheel and its build")
    parser.add_argument("--model", required=True, help="the demo model folder")
    parser.add_argument("--reference-tool", required=True, help="this build tree's rill tool")
    parser.add_argument("--reference-library", required=True, help="this build tree's librill")
    parser.add_argument("--plugin", action="append", default=[], help="a plugin the wheel must carry")
    parser.add_argument("--define", action="append", default=[], help="NAME=VALUE for CMake, as config-settings")
    args = parser.parse_args()

    venv, dist, build = (os.path.join(args.work, name) for name in ("venv", "dist", "build"))
    shutil.rmtree(venv, ignore_errors=True)
    shutil.rmtree(dist, ignore_errors=True)
    run([sys.executable, "-m", "venv", venv])
    python = os.path.join(venv, "bin", "python")
    pip = [python, "-m", "pip", "--disable-pip-version-check"]

    probe = subprocess.run(pip + ["download", "--no-deps", "-q", "-d", os.path.join(args.work, "probe"),
                                  "scikit-build-core"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("skipped: PyPI cannot be reached for scikit-build-core:\n" + probe.stderr)
        return SKIPPED

    start = time.monotonic()
    settings = ["--config-settings=build-dir=" + build]
    settings += ["--config-settings=cmake.define.{}".format(d) for d in args.define]
    run(pip + ["wheel", "--no-deps", "-q", "-w", dist] + settings + [args.source], env=clean_env())
    built = time.monotonic()
    wheels = [os.path.join(dist, n) for n in os.listdir(dist) if n.endswith(".whl")]
    check(len(wheels) == 1, "expected one wheel in {}, got {}".format(dist, wheels))
    check_wheel_files(wheels[0], args.plugin)
    run(pip + ["install", "-q", wheels[0]], env=clean_env())
    installed = time.monotonic()
    print("pip wheel: {:.0f} s, pip install: {:.0f} s".format(built - start, installed - built))

    env = clean_env()
    where = run([python, "-c", "import os, rill; print(os.path.dirname(rill.__file__)); print(rill.library_path())"],
                env=clean_env(RILL_LIBRARY=args.reference_library), cwd=args.work).split("\n")
    package = os.path.realpath(where[0])
    check(package.startswith(os.path.realpath(venv)), "rill imported from {}, not the venv".format(package))
    check(os.path.realpath(where[1]) == os.path.join(package, "librill.so.0"),
          "librill loaded from {}, not the package folder {} (RILL_LIBRARY set elsewhere)".format(where[1], package))

    info = run([python, "-m", "rill", "info"], env=env, cwd=args.work)
    version = run([python, "-c", "import rill; print('rill {}.{}.{}'.format(*rill.version()))"], env=env).strip()
    check(version in info, "python -m rill info does not report {}:\n{}".format(version, info))
    for plugin in args.plugin:
        path = os.path.join(package, "librill-{}.so".format(plugin))
        check(path in info, "python -m rill info does not show the wheel's plugin {}:\n{}".format(path, info))
    print(info, end="")

    generate = ["generate", "--model", args.model, "--prompt", PROMPT, "--seed", "2", "--backend", "cpu",
                "--max-new-tokens", "24"]
    text = run([python, "-m", "rill"] + generate, env=env, cwd=args.work)
    expected = run([args.reference_tool] + generate)
    check(text == expected, "python -m rill generate printed {!r}; the build tree's rill printed {!r}".format(
        text, expected))
    print("python -m rill generate: " + text.strip().replace("\n", " / "))

    ids = run([args.reference_tool] + generate + ["--print-ids"]).split()
    script = ("import sys, rill\n"
              "with rill.LanguageModel.load(sys.argv[1], backend='cpu') as lm:\n"
              "    print(*lm.generate_ids(sys.argv[2], max_new_tokens=24, seed=2))\n")
    got = run([python, "-c", script, args.model, PROMPT], env=env, cwd=args.work).split()
    check(got == ids, "the binding's generate_ids gave {}; the build tree's rill {}".format(got, ids))

    usage = run([python, "-m", "rill", "run", "--help"], env=env, cwd=args.work)
    check(usage.startswith("usage: rill run"), "python -m rill run --help printed:\n" + usage)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
