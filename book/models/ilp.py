"""Thread coarsening against source 003's register table (chapter 6)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from ..harness.plots import STYLE, check_readable
from ..harness.sources import DATA


def source003_ilp() -> pd.Series:
    """Source 003's TFLOP/s by outputs per thread, at m = n = k = 1024."""
    return pd.read_csv(DATA / "source003_ilp.csv", comment="#", index_col="outputs")["tflops"]


def ilp_table(df: pd.DataFrame, occ: pd.DataFrame) -> pd.DataFrame:
    """Outputs per thread: our GFLOP/s at each size, source 003's, registers and occupancy."""
    ok = df[df.kernel.str.startswith("coarse") & (df.status == "ok")].copy()
    ok["outputs"] = ok.kernel.str.removeprefix("coarse").astype(int)
    table = ok.pivot_table(index="outputs", columns="M", values="gflops")
    table.columns = [f"GFLOP/s at n={n}" for n in table.columns]
    top = ok[ok.M == ok.M.max()].set_index("outputs")["pct_of_cublas"]
    table[f"% of cuBLAS at n={ok.M.max()}"] = top
    table["source 003 GFLOP/s at n=1024"] = 1e3 * source003_ilp()
    occ = occ.rename(index=lambda k: int(k.removeprefix("coarse")))
    return table.join(occ[["threads", "registers", "spill_stores", "blocks_per_sm", "limited_by",
                           "occupancy"]]).round(3)


def ilp_plot(table: pd.DataFrame, title: str):
    """GFLOP/s against outputs per thread: ours at each size, source 003's, and occupancy."""
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots()
        for col in [c for c in table.columns if c.startswith("GFLOP/s") or c.startswith("source")]:
            style = {"color": "k", "ls": "--", "marker": "s"} if col.startswith("source") else {"marker": "o"}
            ax.plot(table.index, table[col], label=col, **style)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("outputs of C per thread (OUT)")
        ax.set_ylabel("GFLOP/s")
        ax.set_ylim(bottom=0)
        occ = ax.twinx()
        occ.bar(table.index, table["occupancy"], width=[0.25 * x for x in table.index], alpha=0.2,
                color="0.3", label="theoretical occupancy (right axis)")
        occ.set_ylim(0, 1.05)
        occ.set_ylabel("theoretical occupancy")
        occ.grid(False)
        lines, labels = ax.get_legend_handles_labels()
        bars, blabels = occ.get_legend_handles_labels()
        ax.set_title(title, fontsize=10)
        fig.tight_layout()
        fig.legend(lines + bars, labels + blabels, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                   ncol=2, fontsize=8)
        plt.close(fig)
    return check_readable(fig)
