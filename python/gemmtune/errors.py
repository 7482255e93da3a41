"""Exceptions: one per status of the C API, each carrying the C API's message."""

from __future__ import annotations


class Error(Exception):
    """A gemmtune failure. str(e) is the C API's message; e.status its gemmtune_status."""

    status = None  # gemmtune_status value; None for failures of this package itself

    def __init__(self, message: str, status=None):
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgumentError(Error, ValueError):
    """GEMMTUNE_ERROR_INVALID_ARGUMENT: a bad size, type, layout, pointer or option."""

    status = 1


class BadTableError(Error):
    """GEMMTUNE_ERROR_BAD_TABLE: the table cannot be read, or names a config that no longer exists."""

    status = 2


class NoGpuError(Error):
    """GEMMTUNE_ERROR_NO_GPU: no usable GPU (a dry run needs none)."""

    status = 3


class NotSupportedError(Error):
    """GEMMTUNE_ERROR_NOT_SUPPORTED: no entry can run the problem and there is no default."""

    status = 4


class BuildFailedError(Error):
    """GEMMTUNE_ERROR_BUILD_FAILED: compiling, loading or creating the chosen config failed."""

    status = 5


class LaunchFailedError(Error):
    """GEMMTUNE_ERROR_LAUNCH_FAILED: the launch returned a CUDA error."""

    status = 6


class InternalError(Error):
    """GEMMTUNE_ERROR_INTERNAL: anything else."""

    status = 7


class LibraryNotFoundError(Error, OSError):
    """libgemmtune_runtime.so could not be loaded (the message says where it was looked for)."""


_BY_STATUS = {cls.status: cls for cls in (InvalidArgumentError, BadTableError, NoGpuError, NotSupportedError,
                                          BuildFailedError, LaunchFailedError, InternalError)}


def from_status(status: int, message: str) -> Error:
    cls = _BY_STATUS.get(status)
    if cls is None:
        return Error(f"{message} (unknown gemmtune status {status})", status)
    return cls(message)
