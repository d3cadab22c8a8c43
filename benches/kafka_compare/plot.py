"""Draws results.json of benches/kafka_compare (issue 18) as one PNG: throughput of every
test per system at 100 B and 1 KiB, end-to-end latency percentiles, and peak memory.

    python3 benches/kafka_compare/plot.py RESULTS_JSON OUT_PNG
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(ax, groups, series, values, ylabel, log=False):
    """Grouped bars: one group per label in `groups`, one bar per name in `series`;
    values[s][g] is a number or None (a failed phase: no bar)."""
    width = 0.8 / len(series)
    for s, name in enumerate(series):
        xs = [g + (s - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ys = [v if v is not None else 0 for v in values[s]]
        ax.bar(xs, ys, width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=35, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def main(src, dst):
    r = json.load(open(src))
    systems = r["systems"]
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    for ax, size in zip(axes[0], (100, 1024)):
        rows = [t for t in r["throughput"] if t["size"] == size]
        labels = [f'{t["test"]}, {t["compression"]}' for t in rows]
        values = [[t["per_system"][s]["value"] for t in rows] for s in range(len(systems))]
        values = [[v / 1e6 if v else None for v in vs] for vs in values]
        bars(ax, labels, systems, values, "million records/s")
        ax.set_title(f"Throughput, {size} B records, 8 partitions, acks=all")
    ax = axes[1][0]
    groups, values = [], [[] for _ in systems]
    for lat in r["latency"]:
        for i, q in enumerate(("p50", "p99", "p99.9")):
            groups.append(f'{lat["size"]} B {q} @ {lat["rate"] / 1e3:.0f} k/s')
            for s, p in enumerate(lat["per_system"]):
                values[s].append(p[i] if p else None)
    bars(ax, groups, systems, values, "ms (log)", log=True)
    ax.set_title("End-to-end latency (produce to consumer), paced at half the lowest peak")
    ax = axes[1][1]
    mem = [sum(m for _, m in procs) for procs in r["memory_mib"]]
    ax.bar(range(len(systems)), mem, color=[f"C{i}" for i in range(len(systems))])
    ax.set_xticks(range(len(systems)))
    ax.set_xticklabels(systems, fontsize=8)
    ax.set_ylabel("MiB")
    ax.set_title("Peak resident memory over the run (all of a system's processes)")
    ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(dst, dpi=90)
    print(f"plot: {dst}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
