"""Every registered kernel compiled by NVRTC for sm_70 ... sm_90 (no GPU needed): registers per
thread and spilled bytes per architecture, and which builds fail (below a kernel's min_cc) or ask
for more shared memory than the architecture allows.

    python benchmarks/compile_matrix.py
"""
import sys

import pandas as pd

from book.profile.archs import ARCHS, matrix, supported_archs
from book.registry import KERNELS

pd.set_option("display.width", 250)
pd.set_option("display.max_rows", 500)
archs = supported_archs()
if not archs:
    sys.exit("NVRTC is not available here (pip install -r requirements.txt provides it)")
df = matrix(KERNELS.values(), archs)


def cell(r) -> str:
    if not r.compiles:
        return "no build" if r.expected == "fails" else "FAILS"
    if pd.isna(r.get("registers")):
        return "built (no report)"  # CUDA 13's NVRTC drops ptxas's resource report
    text = f"{r.registers:.0f}" + (f" +{r.spill_stores:.0f}B spill" if r.spill_stores else "")
    return text + ("" if r.shared_fits else " (smem)")


df["cell"] = df.apply(cell, axis=1)
table = df.pivot(index="kernel", columns="arch", values="cell").reindex(list(KERNELS))[archs]
print("registers per thread (+ spilled bytes) by architecture; 'no build': below the kernel's "
      "min_cc; '(smem)': its shared memory exceeds that architecture's opt-in limit\n")
print("  ".join(f"{a}: {g}" for a, g in ARCHS.items() if a in archs), "\n")
print(table.to_string())
wrong = df[(df.expected == "compiles") != df.compiles]
print(f"\n{len(df)} builds; {len(wrong)} disagree with the registry's min_cc")
sys.exit(1 if len(wrong) else 0)
