"""The report's data model over data.json: one row per config, each family's best, cuBLASLt's
pick, roofs and winners; and the figures every section reads off a row (roofline, % roof, labels)."""
from collections import OrderedDict, defaultdict

from .common import DTYPE_ROOF, base_dtype, finite

# ---------------------------------------------------------------------------------------
# The data model

class Model:
    def __init__(self, data):
        self.data = data
        self.meas = [m for m in data.get("measurements", []) if finite(m.get("time_us")) and m["time_us"] > 0]
        # FP8 problems are grouped and labelled by their kind (types and scale mode, "e4m3 row"):
        # every panel that groups by dtype keeps different scales apart.
        for m in self.meas:
            m["dtype"] = m.get("kind", m["dtype"])
        self.by_id = {m["id"]: m for m in self.meas}
        for m in self.meas:
            m["_params"] = OrderedDict((p[0], p[1]) for p in (m.get("params") or []))
        # One row per (device, key, family, config): a fully timed measurement over a
        # quick one (quick timings have fewer samples and may catch the clock unsettled),
        # then the fastest (the store's own rule for winners).
        self.configs = {}
        for m in self.meas:
            k = (m["device"], m["key"], m["family"], m["config"])
            cur = self.configs.get(k)
            if cur is None or rank(m) < rank(cur):
                self.configs[k] = m
        self.fam_best, self.best, self.pick = {}, {}, {}
        # Per problem transform ("none", "pad", "swap", "pad+swap"; docs/transforms.md): a
        # family's best in each form it ran in, and cuBLASLt's pick for each transformed problem.
        # The problem's own pick is the plain one.
        self.form_best, self.form_pick = {}, {}
        self.problems = OrderedDict()
        # Bests likewise: a config timed in full beats one only explored quickly (the
        # tuner re-times its finalists in full; a quick time is a ranking, not a result).
        for (dev, key, fam, _), m in sorted(self.configs.items(), key=lambda kv: problem_order(kv[1])):
            self.problems.setdefault((dev, key), m)
            form = m.get("transform", "none")
            picks = ()
            if m.get("pick"):
                picks = ((self.pick, (dev, key)),) if form == "none" else ((self.form_pick, (dev, key, form)),)
            for table, k in ((self.fam_best, (dev, key, fam)), (self.best, (dev, key)),
                             (self.form_best, (dev, key, fam, form))) + picks:
                if k not in table or rank(m) < rank(table[k]):
                    table[k] = m
        self.roofs = defaultdict(dict)
        for r in data.get("roofs", []):
            if finite(r.get("value")):
                self.roofs[r["device"]][r["name"]] = r
        self.winners = defaultdict(dict)  # (device, key) -> family -> winner
        for w in data.get("winners", []):
            self.winners[(w["device"], w["key"])][w["family"]] = w
        devs = [d for d in data.get("devices", []) if d.get("ok") or self.roofs.get(d["name"])]
        self.devices = sorted(devs, key=lambda d: -d.get("ok", 0))
        fams = sorted({m["family"] for m in self.meas}, key=lambda f: (f == "cublaslt", f))
        self.families = fams

    def roof(self, dev, name):
        r = self.roofs.get(dev, {}).get(name)
        return r["value"] if r else None

    def dtype_roof(self, dev, dtype):
        return self.roof(dev, DTYPE_ROOF.get(dtype, ""))

    def bandwidth(self, dev):
        return self.roof(dev, "mem_read") or self.roof(dev, "mem_copy")

    def problem_keys(self, dev):
        return [k for (d, k) in self.problems if d == dev]

    def family_result(self, dev, key, family):
        """A family's result at a problem: its winner as the store records it (the row its tune decided
        with, a finalist's re-timing), else its fastest measured config. The fastest row of all is no
        better a figure (a later timing of the same config, say compare's, may read lower by chance),
        and one rule for every table and figure keeps them from disagreeing."""
        w = self.winners.get((dev, key), {}).get(family)
        m = self.by_id.get(w["row_id"]) if w else None
        return m if m is not None else self.fam_best.get((dev, key, family))

    def rows(self, dev, key, family=None):
        return [m for (d, k, f, _), m in self.configs.items() if d == dev and k == key and (family is None or f == family)]


def rank(m):
    return (bool(m.get("quick")), m["time_us"])


def problem_order(m):
    return (m["dtype"], m["out_dtype"], m["layout"], m["m"], m["n"], m["k"], m["align"], m["family"], m["config"])


def roofline_at(model, m):
    """The roofline at m's problem: min(the dtype's roof, intensity x memory roof), FLOP/s; None without the
    dtype's roof (the memory roof alone would rate a compute-bound problem against a rate no kernel reaches).
    As `gemmtune compare` (roofline_at in core/src/measure/roofs.hpp), except that a store without mem_read falls back
    to mem_copy, as the roofline plot does."""
    roof = model.dtype_roof(m["device"], base_dtype(m["dtype"]))
    if not roof:
        return None
    bw = model.bandwidth(m["device"])
    if bw and finite(m.get("intensity")):
        return min(roof, bw * m["intensity"])
    return roof


def pct_roof(model, m):
    roof = roofline_at(model, m)
    return 100.0 * m["tflops"] * 1e12 / roof if roof and finite(m.get("tflops")) else float("nan")


NOTE_PREFIXES = ("finalist", "compare:", "heuristic rank", "not among", "tie ")


def short_description(m):
    """The config's own description, without the tuner's and cuBLASLt's notes around it."""
    parts = [p.strip() for p in (m.get("description") or "").split(";")]
    parts = [p for p in parts if p and not p.startswith(NOTE_PREFIXES)]
    return parts[0] if parts else ""


def kernel_label(m, kind=""):
    """A readable name for a measured config, in the lab's words where the family is one of the lab's."""
    p, fam = m["_params"], m["family"]
    io_ = m["dtype"] if m["dtype"] == m["out_dtype"] else f"{m['dtype']}→{m['out_dtype']}"
    if fam == "cublaslt":
        base = "cuBLASLt pick" if m.get("pick") and kind != "best" else "cuBLASLt best"
        return f"{base} ({io_})"
    if fam == "naive" and "map" in p:
        return f"naive, {p['map']} ({io_})"
    if fam == "shared_tile" and "tile_m" in p and "tile_n" in p:
        return f"shared-memory tiles {p['tile_m']}×{p['tile_n']} ({io_})"
    if fam == "register_tile" and all(x in p for x in ("bm", "bn", "tm", "tn")):
        return f"register tiles {p['tm']}×{p['tn']} patch, {p['bm']}×{p['bn']} block ({io_})"
    if fam == "wmma" and "bm" in p and "bn" in p:
        return f"wmma {p['bm']}×{p['bn']} block ({io_})"
    return f"{fam} ({io_})"
