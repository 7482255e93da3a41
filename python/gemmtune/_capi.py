"""The C API of libgemmtune_runtime.so (core/runtime/gemmtune_runtime.h) through ctypes.

Where the library is found, in order:
  1. GEMMTUNE_LIBRARY: the path of libgemmtune_runtime.so;
  2. inside the package (gemmtune/lib/): where a wheel (pip install ./python) bundles it, with
     its plugins beside it in gemmtune/lib/gemmtune/plugins;
  3. beside the `gemmtune` command on PATH: a build keeps the library beside the CLI, an
     install under the prefix's lib folder (bin/../lib);
  4. the dynamic linker's own search (LD_LIBRARY_PATH, ldconfig's cache).
The library finds its plugins from where it is itself, so nothing else needs setting.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
from typing import List, Optional

from . import errors

LIBRARY_NAME = "libgemmtune_runtime.so"
# The C API's struct layouts are those of this ABI (checked through struct_size).
_SONAME_MAJOR = "0"


class Options(ctypes.Structure):
    """gemmtune_options."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("plugin_dirs", ctypes.c_char_p),
        ("cache_dir", ctypes.c_char_p),
        ("device", ctypes.c_int32),
        ("dry_run", ctypes.c_int32),
        ("arch", ctypes.c_char_p),
        ("device_name", ctypes.c_char_p),
        ("default_family", ctypes.c_char_p),
        ("exact_device", ctypes.c_int32),
        ("max_distance", ctypes.c_double),
        ("decode_max_m", ctypes.c_int64),
        ("unbacked_transfers", ctypes.c_int32),
        ("online", ctypes.c_int32),
        ("online_file", ctypes.c_char_p),
        ("record_untuned", ctypes.c_char_p),
    ]


class GemmArgs(ctypes.Structure):
    """gemmtune_gemm_args."""

    _fields_ = [
        ("m", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("k", ctypes.c_int64),
        ("in_dtype", ctypes.c_int32),
        ("out_dtype", ctypes.c_int32),
        ("layout", ctypes.c_int32),
        ("a", ctypes.c_void_p),
        ("lda", ctypes.c_int64),
        ("b", ctypes.c_void_p),
        ("ldb", ctypes.c_int64),
        ("c", ctypes.c_void_p),
        ("ldc", ctypes.c_int64),
    ]


class Scales(ctypes.Structure):
    """gemmtune_scales: an FP8 call's scale mode, B's type and scales (device pointers)."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("mode", ctypes.c_int32),
        ("b_dtype", ctypes.c_int32),
        ("a", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("d", ctypes.c_void_p),
        ("amax_d", ctypes.c_void_p),
    ]


_Handle = ctypes.c_void_p
_Status = ctypes.c_int


def _bundled() -> str:
    """Where a wheel of this package puts the library: lib/ inside the package (with its plugins
    in lib/gemmtune/plugins, where the library looks for them from its own folder)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", LIBRARY_NAME)


def _candidates() -> List[str]:
    """Where the library may be, in the order they are tried."""
    found = []
    env = os.environ.get("GEMMTUNE_LIBRARY")
    if env:
        return [env]  # named: only that one
    if os.path.exists(_bundled()):
        return [_bundled()]  # a wheel's own: the library and plugins it was built with
    cli = shutil.which("gemmtune")
    if cli:
        bindir = os.path.dirname(os.path.realpath(cli))
        prefix = os.path.dirname(bindir)
        found.append(os.path.join(bindir, LIBRARY_NAME))
        for libdir in ("lib", "lib64", os.path.join("lib", "x86_64-linux-gnu"), os.path.join("lib", "aarch64-linux-gnu")):
            found.append(os.path.join(prefix, libdir, LIBRARY_NAME))
    found.append(LIBRARY_NAME + "." + _SONAME_MAJOR)  # the dynamic linker's search
    return found


def _declare(lib: ctypes.CDLL) -> None:
    c = ctypes
    lib.gemmtune_options_init.argtypes = [c.POINTER(Options)]
    lib.gemmtune_options_init.restype = None
    lib.gemmtune_create.argtypes = [c.c_char_p, c.POINTER(Options), c.POINTER(_Handle)]
    lib.gemmtune_create.restype = _Status
    lib.gemmtune_destroy.argtypes = [_Handle]
    lib.gemmtune_destroy.restype = None
    lib.gemmtune_gemm.argtypes = [_Handle, c.POINTER(GemmArgs), c.c_void_p]
    lib.gemmtune_gemm.restype = _Status
    lib.gemmtune_choice.argtypes = [_Handle, c.POINTER(GemmArgs), c.POINTER(c.c_int32), c.c_char_p, c.c_size_t,
                                    c.c_char_p, c.c_size_t]
    lib.gemmtune_choice.restype = _Status
    lib.gemmtune_gemm_scaled.argtypes = [_Handle, c.POINTER(GemmArgs), c.POINTER(Scales), c.c_void_p]
    lib.gemmtune_gemm_scaled.restype = _Status
    lib.gemmtune_choice_scaled.argtypes = [_Handle, c.POINTER(GemmArgs), c.POINTER(Scales), c.POINTER(c.c_int32),
                                           c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t]
    lib.gemmtune_choice_scaled.restype = _Status
    lib.gemmtune_gemm_constant.argtypes = [_Handle, c.POINTER(GemmArgs), c.c_uint32, c.c_void_p]
    lib.gemmtune_gemm_constant.restype = _Status
    lib.gemmtune_choice_constant.argtypes = [_Handle, c.POINTER(GemmArgs), c.c_uint32, c.POINTER(c.c_int32),
                                             c.c_char_p, c.c_size_t, c.c_char_p, c.c_size_t]
    lib.gemmtune_choice_constant.restype = _Status
    lib.gemmtune_choice_json.argtypes = [_Handle, c.POINTER(GemmArgs), c.POINTER(Scales), c.POINTER(c.c_char_p)]
    lib.gemmtune_choice_json.restype = _Status
    lib.gemmtune_set_record_untuned.argtypes = [_Handle, c.c_char_p]
    lib.gemmtune_set_record_untuned.restype = _Status
    lib.gemmtune_runtime_info.argtypes = [_Handle, c.POINTER(c.c_int32), c.POINTER(c.c_int32), c.c_char_p,
                                          c.c_size_t, c.c_char_p, c.c_size_t]
    lib.gemmtune_runtime_info.restype = _Status
    lib.gemmtune_table_json.argtypes = [_Handle, c.POINTER(c.c_char_p)]
    lib.gemmtune_table_json.restype = _Status
    lib.gemmtune_version.argtypes = []
    lib.gemmtune_version.restype = c.c_char_p
    lib.gemmtune_last_error.argtypes = []
    lib.gemmtune_last_error.restype = c.c_char_p
    lib.gemmtune_status_string.argtypes = [_Status]
    lib.gemmtune_status_string.restype = c.c_char_p


_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_path: Optional[str] = None


def load() -> ctypes.CDLL:
    """The library, loaded on first use; LibraryNotFoundError says where it looked."""
    global _lib, _path
    lib = _lib
    if lib is not None:  # loaded: no lock (a call per gemm comes here)
        return lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for path in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                tried.append(f"{path} (no such file)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            _declare(lib)
            _lib, _path = lib, _loaded_path(lib, path)
            return lib
        raise errors.LibraryNotFoundError(
            "libgemmtune_runtime.so was not found; tried: " + "; ".join(tried)
            + ". Set GEMMTUNE_LIBRARY to its path, or put the bin folder of a gemmtune build or install on PATH")


def _loaded_path(lib: ctypes.CDLL, asked: str) -> str:
    """The file the dynamic linker opened for `asked` (a bare name resolves anywhere)."""
    if os.path.sep in asked:
        return os.path.realpath(asked)
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith(LIBRARY_NAME):
                    return fields[5].strip()
    except OSError:
        pass
    return asked


def path() -> str:
    """The file of the loaded library (loading it first)."""
    load()
    assert _path is not None
    return _path


def check(status: int) -> None:
    """Raises the exception for a failed call, with the C API's message."""
    if status != 0:
        lib = load()
        message = lib.gemmtune_last_error().decode("utf-8", "replace")
        raise errors.from_status(status, message)
