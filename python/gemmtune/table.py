"""A tuned lookup table at run time: what to run for a problem, and running it.

Every answer comes from the C API (gemmtune_choice, gemmtune_gemm), so it is the runtime
library's answer: the one a C or C++ program gets from the same table.
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _capi
from .errors import InvalidArgumentError, NoGpuError

DTYPES = {"f32": 0, "tf32": 1, "f16": 2, "bf16": 3, "e4m3": 4, "e5m2": 5}
FP8 = ("e4m3", "e5m2")
LAYOUTS = {"nn": 0, "nt": 1, "tn": 2, "tt": 3}
SCALES = {"tensor": 1, "row": 2, "block": 3}  # FP8 scale modes (gemmtune_scale_mode)
MATCHES = {0: "exact", 1: "nearest", 2: "default"}
ELEMENT_BYTES = {"f32": 4, "tf32": 4, "f16": 2, "bf16": 2, "e4m3": 1, "e5m2": 1}

_TEXT_CAP = 1024  # config names and "how" texts are far shorter
PLANS_CAP = 4096  # problems a table's plans hold; one more empties them (they are only a shortcut)


_MATCHES = {0: "exact", 1: "nearest", 2: "default"}


def constant_bits(constant: str) -> int:
    """"a", "b", "a,b" (or "") as the C API's GEMMTUNE_CONSTANT_A | _B."""
    bits = 0
    for op in filter(None, (x.strip() for x in constant.split(","))):
        if op not in ("a", "b"):
            raise InvalidArgumentError(f"constant: {constant!r} names '{op}'; the operands are a and b")
        bits |= 1 if op == "a" else 2
    return bits


@dataclass(frozen=True)
class Choice:
    """What the table answers for a problem: match is "exact", "nearest" or "default" (as
    `gemmtune lookup` says), config the canonical name of the config (ending "+pad", "+swap" or
    "+pad+swap" where it runs through a problem transform, which the runtime applies), how the
    way it was found ("nearest (from 4096x4096x4096)"). rule: the step that served it ("exact",
    "nearest", "transferred", "adapted", "library default", "family default"); backing: why it
    may run instead of the default ("exact", "evidence", "online", "default", "unbacked", "none"
    for a default; docs/lookup.md); pending: online mode, a default: the transfer its first
    gemm times against it ("": none); reason: a default's, why no entry served."""

    match: str
    config: str
    how: str
    rule: str = ""
    backing: str = ""
    pending: str = ""
    reason: str = ""

    @property
    def is_default(self) -> bool:
        """The library's default, nothing to check: a program may run its own (torch.matmul)."""
        return self.match == "default" and not self.pending


@dataclass(frozen=True)
class Entry:
    """One entry of the table, with the fields of an entry of an exported table."""

    device: str = ""
    m: int = 0
    n: int = 0
    k: int = 0
    dtype: str = ""
    b_dtype: str = ""  # B's type (format 3; an older table's is dtype's)
    out_dtype: str = ""
    layout: str = ""
    align: int = 0
    scale: str = "none"  # FP8: tensor, row or block
    constant: str = ""  # the operands the entry was timed with constant ("b": prepared once; format 4)
    family: str = ""
    config: str = ""
    params: str = ""
    transform: str = "none"  # the problem transform the config runs through (docs/transforms.md)
    time_us: float = 0.0
    tflops: float = 0.0
    family_version: str = ""
    source_hash: str = ""
    measured_at: str = ""
    arch: str = ""
    driver: str = ""
    cuda_runtime: str = ""
    nvrtc: str = ""
    library: str = ""
    gemmtune_version: str = ""
    row_uuid: str = ""
    origin: str = ""
    replay: bool = False
    extra: Dict[str, Any] = field(default_factory=dict, compare=False)  # fields newer than this package

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "Entry":
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(**{k: v for k, v in d.items() if k in known}, extra={k: v for k, v in d.items() if k not in known})

    @property
    def shape(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


_copy_args = _capi.GemmArgs.from_buffer_copy


def _enum(value: str, table: Dict[str, int], what: str) -> int:
    if value not in table:
        raise InvalidArgumentError(f"{what}: '{value}' is not one of {', '.join(table)}")
    return table[value]


def _problem(m: int, n: int, k: int, dtype: str, out_dtype: Optional[str], layout: str,
             lda: Optional[int], ldb: Optional[int], ldc: Optional[int]) -> _capi.GemmArgs:
    """The C API's arguments; leading dimensions default to tight ones."""
    for name, v in (("m", m), ("n", n), ("k", k)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise InvalidArgumentError(f"{name}: {v!r} is not an int")
    g = _capi.GemmArgs()
    g.m, g.n, g.k = m, n, k
    g.in_dtype = _enum(dtype, DTYPES, "dtype")
    out = out_dtype if out_dtype is not None else ("f32" if dtype == "tf32" else "bf16" if dtype in FP8 else dtype)
    g.out_dtype = _enum(out, DTYPES, "out_dtype")
    g.layout = _enum(layout, LAYOUTS, "layout")
    a_t, b_t = layout[0] == "t", layout[1] == "t"
    g.lda = lda if lda is not None else (m if a_t else k)
    g.ldb = ldb if ldb is not None else (k if b_t else n)
    g.ldc = ldc if ldc is not None else n
    return g


def _scales(dtype: str, scale: Optional[str], b_dtype: Optional[str], a: int = 0, b: int = 0, d: int = 0,
            amax_d: int = 0) -> Optional[_capi.Scales]:
    """An FP8 problem's gemmtune_scales (None for any other input type, which takes none)."""
    if dtype not in FP8:
        if scale is not None or b_dtype is not None:
            raise InvalidArgumentError(f"scale and b_dtype are for FP8 inputs (e4m3, e5m2), not {dtype}")
        return None
    s = _capi.Scales()
    s.struct_size = ctypes.sizeof(_capi.Scales)
    s.mode = _enum(scale if scale is not None else "tensor", SCALES, "scale")
    s.b_dtype = -1 if b_dtype is None else _enum(b_dtype, DTYPES, "b_dtype")
    s.a, s.b, s.d, s.amax_d = a or None, b or None, d or None, amax_d or None
    return s


class Table:
    """A table that `gemmtune export` wrote (TOML or JSON), loaded by the runtime library.

    Table.load(path) uses the current GPU; where there is none it loads the table as a dry
    run (lookups work, gemm() raises NoGpuError) and says why in no_gpu_reason.
    """

    def __init__(self, handle: int, path: str, no_gpu_reason: str = ""):
        self._handle = ctypes.c_void_p(handle)
        # What a caller worked out once per problem and kept for the next call (gemmtune.torch:
        # its checked plan and prepared arguments), keyed by the caller; emptied by close().
        self._plans: Dict[Any, Any] = {}
        self.path = path
        self.no_gpu_reason = no_gpu_reason
        lib = _capi.load()
        self._gemm_c = lib.gemmtune_gemm  # bound once: gemm and _launch call it per product
        self._gemm_scaled_c = lib.gemmtune_gemm_scaled  # and _launch_scaled this one
        self._gemm_constant_c = lib.gemmtune_gemm_constant  # and _launch with operands declared constant
        device, dry = ctypes.c_int32(), ctypes.c_int32()
        arch, name = ctypes.create_string_buffer(64), ctypes.create_string_buffer(_TEXT_CAP)
        _capi.check(lib.gemmtune_runtime_info(self._handle, ctypes.byref(device), ctypes.byref(dry), arch,
                                              len(arch), name, len(name)))
        self.dry_run = bool(dry.value)
        self.device: Optional[int] = None if self.dry_run else device.value  # the CUDA ordinal
        self.arch = arch.value.decode()
        self.device_name = name.value.decode()  # whose entries it uses ("": every entry)

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], *, device: Optional[int] = None,
             dry_run: Optional[bool] = None, arch: Optional[str] = None, device_name: Optional[str] = None,
             plugin_dirs: Optional[Sequence[str]] = None, cache_dir: Optional[str] = None,
             default_family: Optional[str] = None, online: Optional[bool] = None,
             online_file: Optional[str] = None, record_untuned: Optional[str] = None,
             unbacked_transfers: bool = False) -> "Table":
        """Loads the table and the plugins.

        device: the CUDA ordinal (default: the current device). dry_run: True looks up and
        builds without a GPU; False needs one; None (default) uses the GPU when there is one.
        arch: the architecture a dry run builds for (sm_90). device_name: whose entries to
        use (default: the GPU's name; a dry run: every entry). plugin_dirs, cache_dir,
        default_family: as gemmtune_options (defaults: the library's plugins, the user's
        cache, none). online: time a transfer no evidence backs against the default on its
        problem's first gemm and keep the faster (None: GEMMTUNE_ONLINE decides); online_file:
        where the decisions go (default: GEMMTUNE_ONLINE_FILE, else beside the table);
        record_untuned: a job file that every problem answered without an exact entry is
        appended to (default: GEMMTUNE_RECORD_UNTUNED); unbacked_transfers: answer from nearest
        entries without evidence, as before (to measure the rules). docs/lookup.md.
        """
        lib = _capi.load()
        o = _capi.Options()
        lib.gemmtune_options_init(ctypes.byref(o))
        keep = []  # the encoded strings must outlive the call

        def text(v: Optional[str]) -> Optional[bytes]:
            if v is None:
                return None
            b = os.fsencode(v)
            keep.append(b)
            return b

        if device is not None:
            o.device = device
        o.arch = text(arch)
        o.device_name = text(device_name)
        o.plugin_dirs = text(":".join(os.fspath(d) for d in plugin_dirs)) if plugin_dirs else None
        o.cache_dir = text(cache_dir)
        o.default_family = text(default_family)
        if online is not None:
            o.online = 1 if online else 0
        o.online_file = text(online_file)
        o.record_untuned = text(record_untuned)
        o.unbacked_transfers = 1 if unbacked_transfers else 0
        path = os.fspath(path)
        handle = ctypes.c_void_p()
        reason = ""
        o.dry_run = 1 if dry_run else 0
        status = lib.gemmtune_create(os.fsencode(path), ctypes.byref(o), ctypes.byref(handle))
        if status == NoGpuError.status and dry_run is None:
            reason = lib.gemmtune_last_error().decode("utf-8", "replace")
            o.dry_run = 1
            status = lib.gemmtune_create(os.fsencode(path), ctypes.byref(o), ctypes.byref(handle))
        _capi.check(status)
        return cls(handle.value, path, reason)

    def close(self) -> None:
        """Frees the handle (also when the object is collected)."""
        self._plans.clear()
        if self._handle.value:
            _capi.load().gemmtune_destroy(self._handle)
            self._handle = ctypes.c_void_p()

    def __enter__(self) -> "Table":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _live(self) -> ctypes.c_void_p:
        if not self._handle.value:
            raise InvalidArgumentError(f"the table {self.path} was closed")
        return self._handle

    def lookup(self, m: int, n: int, k: int, *, dtype: str = "f32", out_dtype: Optional[str] = None,
               layout: Optional[str] = None, align: Optional[int] = None, lda: Optional[int] = None,
               ldb: Optional[int] = None, ldc: Optional[int] = None, scale: Optional[str] = None,
               b_dtype: Optional[str] = None, constant: str = "") -> Choice:
        """The config the table answers for C = A·B (M×N, reduction over K): the answer of
        `gemmtune lookup --table PATH --shape MxNxK --dtype ... --layout ...`.

        dtype: f32, tf32, f16, bf16, or FP8 e4m3, e5m2; out_dtype: default the input type (f32
        for tf32, bf16 for FP8); layout: nn, nt, tn, tt as on the command line (default nn; nt
        for FP8). align: the alignment of the operands in bytes (default: what the leading
        dimensions allow, as for cudaMalloc'ed buffers). FP8: scale tensor (default), row or
        block, and b_dtype where B's type is not A's. constant: the operands a program keeps
        constant ("b"), as gemm(constant=) declares them. The first lookup of a problem also
        builds its config (NVRTC, through the cache).
        """
        layout = layout if layout is not None else ("nt" if dtype in FP8 else "nn")
        g = _problem(m, n, k, dtype, out_dtype, layout, lda, ldb, ldc)
        sc = _scales(dtype, scale, b_dtype)
        if align is not None:
            if align not in (1, 2, 4, 8, 16):
                raise InvalidArgumentError(f"align: {align!r} is not 1, 2, 4, 8 or 16")
            # The C API takes the alignment from the pointers: pointers at that alignment.
            g.a = g.b = g.c = align
        return self._choice(g, sc, constant_bits(constant))

    def _choice(self, g: _capi.GemmArgs, sc: Optional[_capi.Scales] = None, constant: int = 0) -> Choice:
        """The runtime's choice for a problem's arguments (gemmtune_choice_json; with operands
        declared constant, gemmtune_choice_constant, which says match, config and how)."""
        if constant:
            match, config, how = ctypes.c_int32(), ctypes.create_string_buffer(_TEXT_CAP), ctypes.create_string_buffer(_TEXT_CAP)
            _capi.check(_capi.load().gemmtune_choice_constant(self._live(), ctypes.byref(g), constant,
                                                              ctypes.byref(match), config, _TEXT_CAP, how, _TEXT_CAP))
            return Choice(_MATCHES[match.value], config.value.decode(), how.value.decode())
        out = ctypes.c_char_p()
        _capi.check(_capi.load().gemmtune_choice_json(self._live(), ctypes.byref(g),
                                                      None if sc is None else ctypes.byref(sc), ctypes.byref(out)))
        j = json.loads(out.value.decode("utf-8", "replace"))
        return Choice(j["match"], j["config"], j["how"], j["rule"], j["backing"], j["pending"], j["reason"])

    def record_untuned(self, path: Optional[Union[str, "os.PathLike[str]"]]) -> None:
        """Appends every problem answered from now on without an exact entry to the job file
        `path` (`gemmtune tune --config path` reads it as it is); None stops."""
        _capi.check(_capi.load().gemmtune_set_record_untuned(self._live(),
                                                             None if path is None else os.fsencode(path)))

    def entries(self) -> List[Entry]:
        """The table's entries, in its order."""
        out = ctypes.c_char_p()
        _capi.check(_capi.load().gemmtune_table_json(self._live(), ctypes.byref(out)))
        return [Entry.from_json(e) for e in json.loads(out.value.decode())["entries"]]

    def gemm(self, m: int, n: int, k: int, a: int, b: int, c: int, *, dtype: str = "f32",
             out_dtype: Optional[str] = None, layout: str = "nn", lda: Optional[int] = None,
             ldb: Optional[int] = None, ldc: Optional[int] = None, stream: int = 0, constant: str = "") -> None:
        """C = A·B on device pointers a, b, c (ints) and a cudaStream_t (int; 0: the default
        stream), asynchronous like a kernel launch. Leading dimensions in elements, default
        tight. The table's GPU must be the current device. constant: the operands the program
        passes unchanged on every call ("b": its weights; gemmtune_gemm_constant), which entries
        tuned with `--constant b` may then serve."""
        if self.dry_run:
            self._no_gpu()
        g = _problem(m, n, k, dtype, out_dtype, layout, lda, ldb, ldc)
        for name, p in (("a", a), ("b", b), ("c", c)):
            if not isinstance(p, int) or p <= 0:
                raise InvalidArgumentError(f"{name}: {p!r} is not a device pointer (a positive int)")
        self._launch(g, a, b, c, stream, constant_bits(constant))

    def gemm_scaled(self, m: int, n: int, k: int, a: int, b: int, c: int, scale_a: int, scale_b: int, *,
                    dtype: str = "e4m3", b_dtype: Optional[str] = None, out_dtype: Optional[str] = None,
                    scale: str = "tensor", scale_d: int = 0, amax_d: int = 0, lda: Optional[int] = None,
                    ldb: Optional[int] = None, ldc: Optional[int] = None, stream: int = 0) -> None:
        """An FP8 C = (A·sa)·(B·sb) on device pointers (ints), layout nt (A M×K, B stored N×K),
        with the scales' device pointers shaped as `scale` says (tensor, row, block: see
        gemmtune_runtime.h); scale_d / amax_d for an FP8 output (0: none)."""
        if self.dry_run:
            self._no_gpu()
        if dtype not in FP8:
            raise InvalidArgumentError(f"dtype: gemm_scaled multiplies e4m3 or e5m2, not {dtype!r} (use gemm)")
        g = _problem(m, n, k, dtype, out_dtype, "nt", lda, ldb, ldc)
        for name, p in (("a", a), ("b", b), ("c", c), ("scale_a", scale_a), ("scale_b", scale_b)):
            if not isinstance(p, int) or p <= 0:
                raise InvalidArgumentError(f"{name}: {p!r} is not a device pointer (a positive int)")
        g.a, g.b, g.c = a, b, c
        sc = _scales(dtype, scale, b_dtype, scale_a, scale_b, scale_d, amax_d)
        _capi.check(_capi.load().gemmtune_gemm_scaled(self._live(), ctypes.byref(g), ctypes.byref(sc), stream or None))

    def _launch_scaled(self, args: _capi.GemmArgs, scales: _capi.Scales, a: int, b: int, c: int, scale_a: int,
                       scale_b: int, stream: Optional[int]) -> None:
        """gemm_scaled() of arguments from _prepare and _scales: the pointers are new per call."""
        if self.dry_run:
            self._no_gpu()
        handle = self._handle.value
        if not handle:
            self._live()
        g = _copy_args(args)
        g.a, g.b, g.c = a, b, c
        sc = _capi.Scales.from_buffer_copy(scales)
        sc.a, sc.b = scale_a, scale_b
        status = self._gemm_scaled_c(handle, g, sc, stream or None)
        if status:
            _capi.check(status)

    def _no_gpu(self):
        raise NoGpuError(f"the table {self.path} was loaded as a dry run"
                         + (f" ({self.no_gpu_reason})" if self.no_gpu_reason else "") + ": gemm needs a GPU")

    def _prepare(self, m: int, n: int, k: int, *, dtype: str, layout: str, lda: int, ldb: int, ldc: int,
                 out_dtype: Optional[str] = None) -> _capi.GemmArgs:
        """The C API's arguments of a problem without its pointers, checked as gemm() checks
        them: what _launch takes, so that a caller that runs one problem often (gemmtune.torch)
        builds and checks them once."""
        return _problem(m, n, k, dtype, out_dtype, layout, lda, ldb, ldc)

    def _launch(self, args: _capi.GemmArgs, a: int, b: int, c: int, stream: Optional[int], constant: int = 0) -> None:
        """gemm() of arguments from _prepare on device pointers a, b, c and a stream (int, or
        0/None: the default one): only they are new per call. The caller vouches that the
        pointers are those of live device buffers (positive ints: gemm() checks that itself)."""
        if self.dry_run:
            self._no_gpu()
        handle = self._handle.value
        if not handle:
            self._live()  # raises, saying the table was closed
        g = _copy_args(args)  # per call: another thread may launch the same problem meanwhile
        g.a, g.b, g.c = a, b, c
        if constant:
            status = self._gemm_constant_c(handle, g, constant, stream or None)
        else:
            status = self._gemm_c(handle, g, stream or None)
        if status:
            _capi.check(status)

    def __repr__(self) -> str:
        where = "dry run" if self.dry_run else f"GPU {self.device}"
        return f"gemmtune.Table({self.path!r}, {where}, {self.arch})"
