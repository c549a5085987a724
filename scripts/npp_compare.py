#!/usr/bin/env python3
"""Merges `convflow bench kernels --csv` rows with scripts/npp_bench.cu's CSV (measured in the
same device command by `scripts/gpu-run.sh OUT compare`) into one markdown table per size:
convflow's median, its ratio to the floor and to a device-to-device copy of the same frame
(copy: the faster of npp_bench's plainly queued `copy-memcpy` and `copy-kernel` rows, timed like
the filters: the practical memory floor at this size, the kernel's ramp and tail included, for
calls queued as NPP's are; dependent copy: `copy-kernel-dependent`, the copy kernel queued as a
programmatic dependent of the one before, as convflow's `fast` launches are on compute
capability 9.0 and later, where the row exists),
NPP's median and NPP / convflow (> 1: convflow is faster), for the full and the separable path
(an NPP figure marked † was host-paced: some batch of calls started before it was queued whole,
so NPP's host code may count in it; convflow's `events-host-paced` rows are marked alike)
(NPP: nppiFilterBorder32f, and the nppiFilterRowBorder32f + nppiFilterColumnBorder32f pair;
planar and semi-planar formats: one call per plane, timed together). Under each table, the
counts of points within 2× of the floor and at least 1.3× NPP's time, as printed (two decimals;
host-paced figures, marked †, counted as they are).

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
    npp, copy, dcopy = {}, {}, {}
    for path in argv[2:]:
        for r in csv.DictReader(open(path)):
            if r["library"].startswith("copy"):
                key = (int(r["width"]), int(r["height"]), r["format"])
                into = dcopy if r["library"] == "copy-kernel-dependent" else copy
                into[key] = min(into.get(key, float("inf")), float(r["median_us"]))
                continue
            kind = "full" if r["library"] == "npp" else "separable"
            key = (int(r["width"]), int(r["height"]), r["format"], int(r["k"]), kind)
            npp[key] = (float(r["median_us"]), r.get("clock") == "host-paced")
    sizes = sorted({(k[0], k[1]) for k in ours})
    for w, h in sizes:
        print(f"\n#### {w}×{h}\n")
        print("| format | k | floor µs | copy µs | dependent copy µs | full µs | ×floor | ×copy | "
              "×dep. copy | NPP full µs | NPP / full | separable µs | ×floor | ×copy | "
              "×dep. copy | NPP row+col µs | NPP / separable |")
        print("|" + "---|" * 17)
        within = [0, 0]  # points within 2x of the floor, points with a floor
        ahead = [0, 0]  # points at least 1.3x NPP's time, points with an NPP time
        rows = sorted({(k[2], k[3]) for k in ours if (k[0], k[1]) == (w, h)},
                      key=lambda fk: (fk[0], fk[1]))
        for fmt, k in rows:
            cells = []
            floor_full = ours.get((w, h, fmt, k, "full"), (None, None, False))[1]
            cells.append(f"{floor_full:.1f}" if floor_full else "-")
            c, d = copy.get((w, h, fmt)), dcopy.get((w, h, fmt))
            cells.append(f"{c:.1f}" if c else "-")
            cells.append(f"{d:.1f}" if d else "-")
            for path in ("full", "separable"):
                t, floor, t_paced = ours.get((w, h, fmt, k, path), (None, None, False))
                n, n_paced = npp.get((w, h, fmt, k, path), (None, False))
                cells.append(f"{t:.1f}{' †' if t_paced else ''}" if t else "-")
                cells.append(f"{t / floor:.2f}" if t and floor else "-")
                cells.append(f"{t / c:.2f}" if t and c else "-")
                cells.append(f"{t / d:.2f}" if t and d else "-")
                cells.append(f"{n:.1f}{' †' if n_paced else ''}" if n else "-")
                cells.append(f"**{n / t:.2f}**" if n and t else "-")
                if t and floor:
                    within[0] += round(t / floor, 2) <= 2.0
                    within[1] += 1
                if t and n:
                    ahead[0] += round(n / t, 2) >= 1.3
                    ahead[1] += 1
            print(f"| {fmt} | {k} | " + " | ".join(cells) + " |")
        print(f"\nWithin 2× of the floor: {within[0]} / {within[1]}; at least 1.3× NPP: "
              f"{ahead[0]} / {ahead[1]}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
