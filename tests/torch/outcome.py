"""How a reference script ends: the exit code CTest reads (0 passed, 1 a
failure, 77 skipped) and the lines that say why. A skip never hides a failure
recorded before it."""

SKIP = 77


def conclude(failed, skipped, backend, passed_line):
    """Prints the failures, or the skip, or passed_line; returns the exit code."""
    for f in failed:
        print("FAIL", f)
    if failed:
        print(f"{len(failed)} failures on {backend}" + (f"; then skipped: {skipped}" if skipped else ""))
        return 1
    if skipped:
        print(f"skipped: {skipped}")
        return SKIP
    print(passed_line)
    return 0
