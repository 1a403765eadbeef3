#!/usr/bin/env python3
"""Draws the plots at the top of BENCHMARKS.md from docs/benchmarks/figures.json.

    python3 -m pip install matplotlib   # once
    python3 scripts/plot_benchmarks.py  # writes docs/benchmarks/*.svg

Every number drawn is one of figures.json's, which copies it (with its date,
commit and command) from the dated section of docs/benchmarks/journal.md that
measured it. The SVGs are written without a date or random ids, so the same
figures give the same files.
"""
import json
import os
import sys

try:
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_benchmarks.py needs matplotlib: python3 -m pip install matplotlib")

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "..", "docs", "benchmarks")
TIMING_ONLY = "random parameters: timing only, the proofs cannot verify"

plt.rcParams.update({"svg.hashsalt": "porep-c2", "font.size": 9, "figure.dpi": 100})


def save(fig, name):
    path = os.path.join(DOCS, name)
    fig.tight_layout()
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)
    print("wrote", os.path.relpath(path))


def history(data):
    """32 GiB s/proof over the project's life, one point per measured batch."""
    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    xs = range(len(rows))
    ys = [r["s_per_proof"] for r in rows]
    colors = ["#888888" if r["circuit"].startswith("synthetic") else "#1f6fb4" for r in rows]
    ax.bar(xs, ys, color=colors)
    for x, r in zip(xs, rows):
        ax.annotate(
            f'{r["s_per_proof"]:.2f} s\n{r["gpu_busy"]:.0%} busy',
            (x, r["s_per_proof"]),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f'{r["date"][5:]}\n{r["commit"]}' for r in rows], fontsize=8)
    ax.set_ylabel("seconds per proof")
    ax.set_ylim(0, max(ys) * 1.25)
    ax.set_title(data["title"], fontsize=9)
    ax.bar([], [], color="#888888", label="synthetic 32 GiB-shaped circuit")
    ax.bar([], [], color="#1f6fb4", label="real circuit (valid CC test sector)")
    ax.legend(loc="upper right", fontsize=8, title=TIMING_ONLY, title_fontsize=7)
    save(fig, "c2-32g-history.svg")


def kernels(data):
    """One partition's kernel time by stage, stacked, per measurement."""
    stages, rows = data["stages"], data["rows"]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    palette = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860"]
    ys = list(range(len(rows)))
    left = [0.0] * len(rows)
    for i, stage in enumerate(stages):
        widths = [r["ms"][i] for r in rows]
        ax.barh(ys, widths, left=left, color=palette[i % len(palette)], label=stage)
        for y, l, w in zip(ys, left, widths):
            if w > 90:
                ax.text(l + w / 2, y, f"{w:.0f}", ha="center", va="center", fontsize=7, color="white")
        left = [l + w for l, w in zip(left, widths)]
    for y, total in zip(ys, left):
        ax.text(total + 20, y, f"{total:.0f} ms", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels([f'{r["label"]}\n{r["commit"]}' for r in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds of kernels per partition")
    ax.set_xlim(0, max(left) * 1.15)
    ax.set_title(data["title"], fontsize=9)
    ax.legend(ncol=6, fontsize=7, loc="lower center", bbox_to_anchor=(0.5, -0.45))
    save(fig, "partition-kernels-32g.svg")


def caps(data):
    """s/partition and host-to-device bytes per partition against the cap."""
    rows = data["rows"]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    xs = list(range(len(rows)))
    wall = [r["s_per_partition"] for r in rows]
    kern = [r["kernels_s"] for r in rows]
    ax.bar([x - 0.2 for x in xs], wall, width=0.4, color="#1f6fb4", label="s/partition (wall)")
    ax.bar([x + 0.2 for x in xs], kern, width=0.4, color="#9ecae1", label="kernels")
    for x, w, k in zip(xs, wall, kern):
        ax.text(x - 0.2, w, f"{w:.2f}", ha="center", va="bottom", fontsize=8)
        ax.text(x + 0.2, k, f"{k:.2f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels([f'cap {r["cap"]}\n({r["note"]})' for r in rows], fontsize=8)
    ax.set_ylabel("seconds")
    ax.set_ylim(0, max(wall) * 1.45)
    gb = ax.twinx()
    gb.plot(xs, [r["h2d_gb"] for r in rows], "o-", color="#c44e52", label="GB host-to-device per partition")
    gb.set_ylabel("GB to the device per partition", color="#c44e52")
    gb.set_ylim(0, max(r["h2d_gb"] for r in rows) * 1.45)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = gb.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper center", ncol=3)
    ax.set_title(data["title"], fontsize=9)
    save(fig, "caps-32g.svg")


def main():
    with open(os.path.join(DOCS, "figures.json")) as f:
        figures = json.load(f)
    history(figures["c2_32g_history"])
    kernels(figures["partition_kernels_32g"])
    caps(figures["caps_32g"])


if __name__ == "__main__":
    main()
