#!/usr/bin/env python3
"""Merges `convflow bench kernels --csv` rows with scripts/npp_bench.cu's CSV (measured in the
same device command by `scripts/gpu-run.sh OUT compare`) into one markdown table per size:
convflow's median, its ratio to the floor and to a device-to-device copy of the same frame
(the faster of npp_bench's `copy-*` rows, timed like the filters: the practical memory floor at
this size, the kernel's ramp and tail included),
NPP's median and NPP / convflow (> 1: convflow is faster), for the full and the separable path
(an NPP figure marked † was host-paced: some batch of calls started before it was queued whole,
so NPP's host code may count in it; convflow's `events-host-paced` rows are marked alike)
(NPP: nppiFilterBorder32f, and the nppiFilterRowBorder32f + nppiFilterColumnBorder32f pair;
planar and semi-planar formats: one call per plane, timed together).

    python3 scripts/npp_compare.py CONVFLOW.csv NPP.csv [NPP.csv ...]
"""
import csv
import sys


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    ours = {}
    for r in csv.DictReader(open(argv[1])):
        key = (int(r["width"]), int(r["height"]), r["format"], int(r["k"]), r["path"])
        ours[key] = (float(r["median_s"]) * 1e6, float(r["floor_s"] or "nan") * 1e6,
                     r.get("clock") == "events-host-paced")
    npp, copy = {}, {}
    for path in argv[2:]:
        for r in csv.DictReader(open(path)):
            if r["library"].startswith("copy"):
                key = (int(r["width"]), int(r["height"]), r["format"])
                copy[key] = min(copy.get(key, float("inf")), float(r["median_us"]))
                continue
            kind = "full" if r["library"] == "npp" else "separable"
            key = (int(r["width"]), int(r["height"]), r["format"], int(r["k"]), kind)
            npp[key] = (float(r["median_us"]), r.get("clock") == "host-paced")
    sizes = sorted({(k[0], k[1]) for k in ours})
    for w, h in sizes:
        print(f"\n#### {w}×{h}\n")
        print("| format | k | floor µs | copy µs | full µs | ×floor | ×copy | NPP full µs | "
              "NPP / full | separable µs | ×floor | ×copy | NPP row+col µs | NPP / separable |")
        print("|" + "---|" * 14)
        rows = sorted({(k[2], k[3]) for k in ours if (k[0], k[1]) == (w, h)},
                      key=lambda fk: (fk[0], fk[1]))
        for fmt, k in rows:
            cells = []
            floor_full = ours.get((w, h, fmt, k, "full"), (None, None, False))[1]
            cells.append(f"{floor_full:.1f}" if floor_full else "-")
            c = copy.get((w, h, fmt))
            cells.append(f"{c:.1f}" if c else "-")
            for path in ("full", "separable"):
                t, floor, t_paced = ours.get((w, h, fmt, k, path), (None, None, False))
                n, n_paced = npp.get((w, h, fmt, k, path), (None, False))
                cells.append(f"{t:.1f}{' †' if t_paced else ''}" if t else "-")
                cells.append(f"{t / floor:.2f}" if t and floor else "-")
                cells.append(f"{t / c:.2f}" if t and c else "-")
                cells.append(f"{n:.1f}{' †' if n_paced else ''}" if n else "-")
                cells.append(f"**{n / t:.2f}**" if n and t else "-")
            print(f"| {fmt} | {k} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
