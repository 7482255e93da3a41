# gemmtune.torch.scaled_mm beside torch._scaled_mm: same inputs, same run, e4m3 with tensor and row scales.
#   python3 tools/bench_scaled_mm.py TABLE   (with GEMMTUNE_LIBRARY and PYTHONPATH=python, on a GPU)
import sys, warnings, torch, gemmtune, gemmtune.torch as gt
t = gemmtune.Table.load(sys.argv[1])
def time(fn, n=50):
    for _ in range(5): fn()
    torch.cuda.synchronize(); e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True); e0.record()
    for _ in range(n): fn()
    e1.record(); torch.cuda.synchronize(); return e0.elapsed_time(e1) * 1000 / n
for M, N, K in [(4096, 4096, 4096), (1024, 4096, 4096)]:
    a = torch.randn(M, K, device="cuda"); w = torch.randn(N, K, device="cuda")
    for mode in ("tensor", "row"):
        if mode == "tensor":
            sa = (a.abs().max() / 448).float(); sb = (w.abs().max() / 448).float()
            a8 = (a / sa).to(torch.float8_e4m3fn); b8 = (w / sb).to(torch.float8_e4m3fn).t()
        else:
            sa = (a.abs().amax(1, keepdim=True) / 448).float(); sb = (w.abs().amax(1, keepdim=True) / 448).float()
            a8 = (a / sa).to(torch.float8_e4m3fn); b8 = (w / sb).to(torch.float8_e4m3fn).t(); sb = sb.t().contiguous()
        with warnings.catch_warnings(record=True) as wl:
            warnings.simplefilter("always")
            ours = gt.scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16, table=t)
        ref = torch._scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16)
        err = ((ours.float() - ref.float()).norm() / ref.float().norm()).item()
        tt = time(lambda: torch._scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16))
        to = time(lambda: gt.scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16, table=t))
        print(f"{M}x{N}x{K} {mode}: rel diff {err:.2e}, torch {tt:.1f} us, gemmtune {to:.1f} us, torch/ours {tt/to:.3f}",
              t.lookup(M, N, K, dtype="e4m3", scale=mode).how, [str(x.message)[:100] for x in wl])
