"""Exceptions: one class per rill_status, all derived from RillError.

A failing C call raises the class of its status with the message of
rill_last_error(). Checks done on the Python side (array shapes and dtypes)
raise the same classes, so a host catches one hierarchy whichever side noticed.
"""

import enum


class Status(enum.IntEnum):
    """The values of rill_status in rill.h (fixed forever)."""

    OK = 0
    INVALID_ARGUMENT = 1
    SHAPE = 2
    DTYPE = 3
    OUT_OF_MEMORY = 4
    BACKEND_UNAVAILABLE = 5
    CONFIG = 6
    IO = 7
    UNSUPPORTED = 8
    BACKEND = 9
    INTERNAL = 10
    NOT_FOUND = 11


class RillError(Exception):
    """Base of every error rill reports. status: the rill_status (a Status, or
    an int for a value this binding does not know); message: the text."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgumentError(RillError, ValueError):
    status = Status.INVALID_ARGUMENT


class ShapeError(RillError, ValueError):
    status = Status.SHAPE


class DtypeError(RillError, TypeError):
    status = Status.DTYPE


class OutOfMemoryError(RillError, MemoryError):
    status = Status.OUT_OF_MEMORY


class BackendUnavailableError(RillError):
    status = Status.BACKEND_UNAVAILABLE


class ConfigError(RillError, ValueError):
    status = Status.CONFIG


class IoError(RillError, OSError):
    status = Status.IO


class UnsupportedError(RillError):
    status = Status.UNSUPPORTED


class BackendError(RillError):
    status = Status.BACKEND


class InternalError(RillError):
    status = Status.INTERNAL


class NotFoundError(RillError, LookupError):
    """A named thing does not exist or has not been set (a model weight)."""

    status = Status.NOT_FOUND


class LibraryNotFoundError(OSError):
    """librill could not be loaded; tried lists every (path, reason) attempted."""

    def __init__(self, tried):
        self.tried = list(tried)
        lines = ["librill could not be loaded; tried:"]
        lines += ["  {}: {}".format(path, reason) for path, reason in self.tried]
        lines.append("Pass a path to rill.load_library(), set RILL_LIBRARY to librill's path, "
                     "or put librill on the library search path (LD_LIBRARY_PATH).")
        super().__init__("\n".join(lines))


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, ShapeError, DtypeError, OutOfMemoryError, BackendUnavailableError,
    ConfigError, IoError, UnsupportedError, BackendError, InternalError, NotFoundError)}


def error_for_status(status, message):
    """The exception object for a nonzero rill_status value."""
    try:
        known = Status(status)
    except ValueError:
        return RillError("{} (unknown rill_status {})".format(message, status), status)
    return _BY_STATUS.get(known, RillError)(message)
