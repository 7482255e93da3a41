"""gemmtune from Python: use a tuned lookup table that `gemmtune export` wrote.

    import gemmtune
    table = gemmtune.Table.load("table.toml")          # the current GPU; no GPU: a dry run
    table.lookup(4096, 4096, 4096, dtype="bf16")       # Choice(match='exact', config=..., how=...)
    table.entries()                                    # [Entry(device=..., m=..., ...), ...]
    table.gemm(m, n, k, a_ptr, b_ptr, c_ptr, dtype="bf16", stream=s)   # device pointers

    import gemmtune.torch
    c = gemmtune.torch.matmul(a, b, table=table)       # CUDA tensors; else torch.matmul, saying why

Everything goes through the C API of libgemmtune_runtime.so (ctypes: nothing is compiled
when the package is installed); failures raise gemmtune.Error subclasses carrying the C
API's message. Where the library is looked for: gemmtune._capi.
"""

from __future__ import annotations

from . import _capi
from .errors import (BadTableError, BuildFailedError, Error, InternalError, InvalidArgumentError, LaunchFailedError,
                     LibraryNotFoundError, NoGpuError, NotSupportedError)
from .table import DTYPES, LAYOUTS, Choice, Entry, Table

__version__ = "0.1.0"

__all__ = ["Table", "Choice", "Entry", "Error", "InvalidArgumentError", "BadTableError", "NoGpuError",
           "NotSupportedError", "BuildFailedError", "LaunchFailedError", "InternalError", "LibraryNotFoundError",
           "DTYPES", "LAYOUTS", "library_path", "library_version"]


def library_path() -> str:
    """The libgemmtune_runtime.so this package uses (loading it)."""
    return _capi.path()


def library_version() -> str:
    """The loaded library's version ("0.1.0")."""
    return _capi.load().gemmtune_version().decode()
