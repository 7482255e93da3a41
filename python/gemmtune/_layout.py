"""How strided matrices map onto gemmtune's layouts (no torch needed, so it is tested alone).

gemmtune's layouts, first letter A, second B: 'n' = row-major as written (A M×K, B K×N),
't' = stored transposed (A as a row-major K×M, B as a row-major N×K): in strides, a
transposed view of a row-major tensor. C is M×N row-major with ldc.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union


def operand(rows: int, cols: int, stride: Sequence[int]) -> Union[Tuple[str, int], str]:
    """('n', ld) for a row-major rows×cols matrix, ('t', ld) for a transposed one, else the
    reason it is neither. The stride of a dimension of size 1 does not matter."""
    s0, s1 = stride
    if (s1 == 1 or cols == 1) and (rows == 1 or s0 >= cols):
        return "n", s0 if rows > 1 else cols
    if (s0 == 1 or rows == 1) and (cols == 1 or s1 >= rows):
        return "t", s1 if cols > 1 else rows
    return f"strides ({s0}, {s1}) of a {rows}x{cols} matrix are neither row-major nor a transposed row-major view"


@dataclass(frozen=True)
class Plan:
    m: int
    n: int
    k: int
    layout: str
    lda: int
    ldb: int
    ldc: int


def plan(a_shape: Sequence[int], a_stride: Sequence[int], b_shape: Sequence[int], b_stride: Sequence[int],
         c_shape: Optional[Sequence[int]] = None, c_stride: Optional[Sequence[int]] = None) -> Union[Plan, str]:
    """The problem of C = A·B for 2-D A (M×K) and B (K×N) with these strides, written to a C
    of c_shape and c_stride (None: a fresh row-major M×N); else the reason gemmtune cannot
    run it."""
    if len(a_shape) != 2 or len(b_shape) != 2:
        return f"gemmtune multiplies 2-D matrices, not {len(a_shape)}-D by {len(b_shape)}-D"
    (m, k), (k2, n) = a_shape, b_shape
    if k != k2:
        return f"A is {m}x{k} and B is {k2}x{n}: their inner sizes differ"
    if min(m, n, k) < 1:
        return f"an empty product ({m}x{n}x{k})"
    a = operand(m, k, a_stride)
    if isinstance(a, str):
        return "A: " + a
    b = operand(k, n, b_stride)
    if isinstance(b, str):
        return "B: " + b
    ldc = n
    if c_shape is not None:
        if tuple(c_shape) != (m, n):
            return f"out is {'x'.join(map(str, c_shape))}, the product is {m}x{n}"
        c = operand(m, n, c_stride)
        if isinstance(c, str) or c[0] != "n":
            return f"out: strides {tuple(c_stride)} are not those of a row-major {m}x{n} matrix"
        ldc = c[1]
    return Plan(m, n, k, a[0] + b[0], a[1], b[1], ldc)
