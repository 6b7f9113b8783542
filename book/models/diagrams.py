"""Pictures of each chapter's idea, drawn from a kernel's own launch parameters (chapters 2-8).

Every function takes a registered kernel (a :class:`~book.registry.KernelSpec`) and reads its
block, tile and defines -- the values the kernel is compiled and launched with -- so a reader who
changes a define (``async_tile(STAGES=3)``, ``_regtile(128, 128, 8, 8, 4)``) redraws a true
picture. Each picture has a ``*_layout`` function that returns what it draws as plain arrays;
the tests set those beside the chapters' models (sectors, banks, traffic).

Functions return a closed Figure, so a notebook cell displays it once.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle

from ..harness.measure import padded_length
from ..harness.plots import STYLE, check_readable, wrap
from ..registry import ceil_div
from .banks import BANKS, degree, store_words, tile_lanes
from .coalescing import FLOAT, SECTOR_BYTES, WARP, sectors, thread_coordinates

HIGHLIGHT = "#d62728"


def _defines(spec) -> dict:
    return dict(spec.defines)


def _cells(ax, rows: int, cols: int, title: str):
    """An empty grid of rows x cols cells, row 0 at the top."""
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)
    ax.set_title(title, fontsize=9)


def _box(ax, x, y, w, h, **kw):
    kw = {"fill": False, "lw": 1.2, "ec": "k", **kw}
    ax.add_patch(Rectangle((x, y), w, h, **kw))


# Chapter 2: which thread computes which element of C -------------------------------------------

def thread_layout(spec, M: int, N: int) -> dict:
    """For every element of C (M x N), the block that computes it; the idle threads of the grid."""
    row, col, active = thread_coordinates(spec, M, N)
    per_block = ceil_div(spec.block[0] * spec.block[1], WARP)  # warps per block
    block = np.repeat(np.arange(len(row)) // per_block, WARP).reshape(row.shape)
    owner = np.full((M, N), -1)
    owner[row[active], col[active]] = block[active]
    covered = np.zeros((M, N), int)
    np.add.at(covered, (row[active], col[active]), 1)
    gx, gy = spec.grid(M, N)
    threads = gx * gy * spec.block[0] * spec.block[1]
    return {"owner": owner, "covered": covered, "grid": (gx, gy), "threads": threads,
            "idle_threads": threads - int(active.sum())}


def thread_map(spec, M: int = 40, N: int = 56):
    """C coloured by the block that computes each element; warp 0 of block 0 outlined; the
    grid's threads that fall outside C hatched."""
    lay = thread_layout(spec, M, N)
    row, col, active = (x[0] for x in thread_coordinates(spec, M, N))
    rows, cols = (M, N) if spec.mapping == "flat" else (
        (lay["grid"][1] * spec.tile[0], lay["grid"][0] * spec.tile[1]) if spec.mapping == "tile"
        else (lay["grid"][0] * spec.tile[0], lay["grid"][1] * spec.tile[1]))
    with plt.rc_context(STYLE):
        width = STYLE["figure.figsize"][0]
        fig, ax = plt.subplots(figsize=(width, width * rows / cols + 1.2))
        _cells(ax, rows, cols, f"{spec.label}: C is {M} x {N}; grid {lay['grid'][0]} x "
                               f"{lay['grid'][1]} blocks of {spec.block[0]} x {spec.block[1]} threads"
                               f"\ncolour = block; red = the 32 threads of warp 0;\nhatched: "
                               f"{lay['idle_threads']} threads outside C, which return at once")
        ax.imshow(np.where(lay["owner"] < 0, np.nan, lay["owner"] % 10), cmap="tab10", vmin=0,
                  vmax=10, alpha=0.55, extent=(0, N, M, 0), interpolation="nearest")
        _box(ax, 0, 0, N, M, lw=2)
        if rows > M or cols > N:
            _box(ax, N, 0, cols - N, rows, hatch="///", ec="0.6", lw=0)
            _box(ax, 0, M, N, rows - M, hatch="///", ec="0.6", lw=0)
        for r, c in zip(row[active], col[active]):
            _box(ax, c, r, 1, 1, ec=HIGHLIGHT, lw=1.0)
        if spec.mapping != "flat":
            for x in range(0, cols + 1, spec.tile[1]):
                ax.axvline(x, color="k", lw=0.8)
            for y in range(0, rows + 1, spec.tile[0]):
                ax.axhline(y, color="k", lw=0.8)
        ax.set_xlabel("column of C" + (" (threadIdx.x runs along it)" if spec.mapping == "tile" else
                                       " (threadIdx.x runs down the rows)"
                                       if spec.mapping == "tile_xrows" else ""))
        plt.close(fig)
    return check_readable(fig)


# Chapter 3: the 32-byte sectors one warp's loads touch ------------------------------------------

def sector_layout(spec, M: int, N: int, K: int, k: int = 0) -> dict:
    """Warp 0's loads of A[row][k] and B[k][col]: the floats read and the sectors they touch."""
    row, col, active = (x[:1] for x in thread_coordinates(spec, M, N))
    a, b = FLOAT * (row * K + k), FLOAT * (k * N + col)
    return {"A": np.unique(a[active]) // FLOAT, "B": np.unique(b[active]) // FLOAT,
            "A sectors": int(sectors(a, active)[0]), "B sectors": int(sectors(b, active)[0])}


def sector_map(*specs, M: int = 32, N: int = 32, K: int = 32, k: int = 0):
    """A and B as they lie in memory (each band of 8 floats one 32-byte sector), one row of
    panels per kernel: the floats warp 0 reads at step k, and the sectors it touches."""
    per = SECTOR_BYTES // FLOAT
    colors = plt.matplotlib.colors.ListedColormap(["white", "#fdd0a2", HIGHLIGHT])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(len(specs), 2, figsize=(STYLE["figure.figsize"][0], 3.6 * len(specs)),
                                 squeeze=False)
        for row, spec in zip(axes, specs):
            lay = sector_layout(spec, M, N, K, k)
            for ax, name, cols, rows in ((row[0], "A", K, M), (row[1], "B", N, K)):
                floats = lay[name]
                grid = np.zeros((rows, cols))
                grid.flat[np.unique(floats // per * per)[:, None] + np.arange(per)] = 1
                grid.flat[floats] = 2
                _cells(ax, rows, cols, f"{spec.label}\n{name} ({rows} x {cols}, row-major): "
                                       f"{lay[name + ' sectors']} sector(s)")
                ax.imshow(grid, cmap=colors, vmin=0, vmax=2, extent=(0, cols, rows, 0),
                          interpolation="nearest")
                for x in range(0, cols + 1, per):
                    ax.axvline(x, color="0.6", lw=0.6)
                for y in range(rows + 1):
                    ax.axhline(y, color="0.85", lw=0.3)
        fig.suptitle(f"warp 0 at k = {k}: red, the floats it reads;\norange, the rest of each "
                     "32-byte sector it touches", fontsize=9.5)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


# Chapter 4: tiles moving along K through shared memory ------------------------------------------

def tile_layout(spec, M: int, N: int, K: int, block: tuple[int, int] = (1, 1)) -> dict:
    """The tiles of A and B block (by, bx) stages in shared memory, step by step along K."""
    rows, cols = spec.tile
    step = _defines(spec).get("TILE", cols)
    by, bx = block
    steps = ceil_div(K, step)
    return {"steps": steps, "C": (by * rows, bx * cols, rows, cols),
            "A": [(by * rows, s * step, rows, min(step, K - s * step)) for s in range(steps)],
            "B": [(s * step, bx * cols, min(step, K - s * step), cols) for s in range(steps)]}


def tile_walk(spec, M: int = 64, N: int = 64, K: int = 80, block: tuple[int, int] = (1, 1)):
    """A, B and C of one block: its tile of C and the tiles of A and B it loads at each step."""
    lay = tile_layout(spec, M, N, K, block)
    colors = plt.cm.viridis(np.linspace(0.15, 0.9, lay["steps"]))
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 3, figsize=(STYLE["figure.figsize"][0], 3.6),
                                 gridspec_kw={"width_ratios": [K, N, N]})
        for ax, name, shape in zip(axes, "ABC", ((M, K), (K, N), (M, N))):
            _cells(ax, *shape, f"{name} ({shape[0]} x {shape[1]})")
            _box(ax, 0, 0, shape[1], shape[0], ec="0.5")
        for s, (ra, rb) in enumerate(zip(lay["A"], lay["B"])):
            for ax, (r, c, h, w) in ((axes[0], ra), (axes[1], rb)):
                _box(ax, c, r, w, h, fill=True, fc=colors[s], ec="k", alpha=0.8)
                ax.text(c + w / 2, r + h / 2, str(s), ha="center", va="center", fontsize=9, color="w")
        r, c, h, w = lay["C"]
        _box(axes[2], c, r, w, h, fill=True, fc=HIGHLIGHT, alpha=0.7)
        fig.suptitle(f"{spec.label}: block (x={block[1]}, y={block[0]}) computes the red tile of C "
                     f"in {lay['steps']} steps along K = {K};\nstep s stages tile s of A and of B in "
                     "shared memory,\nthen every thread runs its k loop over them", fontsize=9.5)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


# Chapter 5: which bank each lane hits ------------------------------------------------------------

def bank_layout(spec, warp: int = 0) -> dict:
    """Warp ``warp``'s store of the A tile: the word each lane writes, its bank, the degree."""
    t = spec.tile[0]
    tx, ty = tile_lanes(t, warp)
    words = store_words(spec, tx, ty)[0]
    return {"words": words, "banks": words % BANKS, "degree": int(degree(words)),
            "row_words": t + _defines(spec).get("PAD", 0), "rows": t}


def bank_map(*specs, warp: int = 0):
    """The shared A tile of each kernel as words coloured by bank, side by side; the words of
    one warp's store outlined in full colour, with the lane storing each written in (every 4th
    lane where the cells are too small for all of them)."""
    cmap = plt.get_cmap("hsv")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(specs), figsize=(STYLE["figure.figsize"][0], 4.8),
                                 squeeze=False)
        lays = [bank_layout(spec, warp) for spec in specs]
        for ax, spec, lay in zip(axes[0], specs, lays):
            rows, width = lay["rows"], lay["row_words"]
            _cells(ax, rows, width, f"{spec.label}\n[{rows}][{width}] words; warp {warp}'s store: "
                                    f"{lay['degree']}-way")
            banks = (np.arange(rows * width) % BANKS).reshape(rows, width)
            ax.imshow(banks, cmap=cmap, vmin=0, vmax=BANKS, alpha=0.25,
                      extent=(0, width, rows, 0), interpolation="nearest")
            for word in lay["words"]:
                r, c = divmod(int(word), width)
                _box(ax, c, r, 1, 1, fill=True, fc=cmap(int(word) % BANKS / BANKS), ec="k", lw=0.8)
            if width > rows:
                ax.axvline(rows, color="k", lw=1.5, ls="--")
        fig.suptitle("The A tile in shared memory, coloured by bank (word % 32); boxed: the words "
                     f"warp {warp} stores,\nin full colour; numbers: LANES (dashed: the padding "
                     "column)", fontsize=9.5)
        fig.tight_layout()
        cell = min(ax.get_window_extent().width / lay["row_words"] for ax, lay in zip(axes[0], lays))
        every = 1 if cell >= 18 else 4  # a two-digit number at 8 pt needs about 15 px
        for ax, lay in zip(axes[0], lays):
            for lane, word in enumerate(lay["words"]):
                if lane % every == 0:
                    r, c = divmod(int(word), lay["row_words"])
                    ax.text(c + (1.15 if every > 1 else 0.5), r + 0.5, str(lane),
                            ha="left" if every > 1 else "center", va="center", fontsize=8,
                            fontweight="bold" if every > 1 else "normal")
        title = fig._suptitle
        title.set_text(title.get_text().replace("LANES", "the lane storing each word" if every == 1
                                                 else "every 4th lane, beside the word it stores"))
        plt.close(fig)
    return check_readable(fig)


# Chapter 6: a thread's register tile inside the block tile --------------------------------------

def register_layout(spec, thread: int = 0) -> dict:
    """06_regtile.cu's block tile: each thread's TM x TN piece of C, and the shared-memory
    values thread ``thread`` reads at one step of k."""
    d = _defines(spec)
    bm, bn, tm, tn = d["BM"], d["BN"], d["TM"], d["TN"]
    per_row = bn // tn
    owner = (np.arange(bm)[:, None] // tm) * per_row + np.arange(bn)[None, :] // tn
    trow, tcol = divmod(thread, per_row)
    return {"owner": owner, "threads": (bm // tm) * (bn // tn), "a_rows": trow * tm + np.arange(tm),
            "b_cols": tcol * tn + np.arange(tn), "shared_loads_per_fma": 1 / tn + 1 / tm, **d}


def register_tile(spec, thread: int = 0):
    """The BM x BN block tile cut into TM x TN thread tiles; one thread's tile with the TM values
    of As and TN values of Bs it multiplies at each k (an outer product: TM * TN FMAs)."""
    lay = register_layout(spec, thread)
    bm, bn, bk = lay["BM"], lay["BN"], lay["BK"]
    with plt.rc_context(STYLE):
        fig, grid = plt.subplots(2, 2, figsize=(STYLE["figure.figsize"][0], 6.9), gridspec_kw={
            "width_ratios": [bk, bn], "height_ratios": [bk, bm]})
        grid[0, 0].axis("off")
        a, b, c = grid[1, 0], grid[0, 1], grid[1, 1]
        _cells(a, bm, bk, f"As ({bk} x {bm},\nk-major)")
        _cells(b, bk, bn, f"Bs (B tile, {bk} x {bn})")
        _cells(c, bm, bn, f"C tile, {bm} x {bn}: {lay['threads']} threads of "
                          f"{lay['TM']} x {lay['TN']}")
        per_row = bn // lay["TN"]
        checker = (lay["owner"] // per_row + lay["owner"] % per_row) % 2  # thread tiles alternate
        c.imshow(checker, cmap="Greys", vmin=0, vmax=4, extent=(0, bn, bm, 0), interpolation="nearest")
        r0, c0 = lay["a_rows"][0], lay["b_cols"][0]
        _box(c, c0, r0, lay["TN"], lay["TM"], fill=True, fc=HIGHLIGHT, ec=HIGHLIGHT)
        _box(a, 0, 0, bk, bm, ec="0.5")
        _box(b, 0, 0, bn, bk, ec="0.5")
        _box(a, 2, r0, 1, lay["TM"], fill=True, fc=HIGHLIGHT, ec=HIGHLIGHT)
        _box(b, c0, 2, lay["TN"], 1, fill=True, fc=HIGHLIGHT, ec=HIGHLIGHT)
        fig.suptitle(f"{spec.label}\nthread {thread} at k = 2: {lay['TM']} values of As and "
                     f"{lay['TN']} of Bs into registers, {lay['TM'] * lay['TN']} FMAs "
                     f"({lay['shared_loads_per_fma']:.2f} shared loads per FMA)", fontsize=9.5)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


# Chapter 7: rows padded to a pitch --------------------------------------------------------------

def pitch_layout(n: int, ld: int, width: int, rows: int = 8) -> dict:
    """Where the first ``width`` floats of each of the first rows lie relative to 32-byte sectors
    (row r starts r * ld floats from a 256-byte aligned base), and the sectors each touches."""
    starts = FLOAT * ld * np.arange(rows)
    addresses = starts[:, None] + FLOAT * np.arange(min(width, n))
    return {"offset": starts % 128, "sectors": sectors(addresses), "n": n, "ld": ld}


def pitched_rows(spec, n: int, layouts: dict[str, int], rows: int = 8):
    """One panel per layout: the floats a warp reads from the first rows, placed at their byte
    offset within a 128-byte line, with the 32-byte sector boundaries."""
    width = _defines(spec).get("TILE", WARP)
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(layouts), figsize=(min(STYLE["figure.figsize"][0],
                                                               3.4 * len(layouts)), 3.8),
                                 squeeze=False)
        for ax, (name, align) in zip(axes[0], layouts.items()):
            ld = padded_length(n, align)
            lay = pitch_layout(n, ld, width, rows)
            span = 128 + FLOAT * width
            _cells(ax, rows, span // FLOAT, f"{wrap(name, 30)}:\nld = {ld}, "
                                            f"{lay['sectors'].mean():.2f} sectors per row")
            ax.set_aspect("auto")
            for r, (off, count) in enumerate(zip(lay["offset"], lay["sectors"])):
                _box(ax, off // FLOAT, r + 0.15, width, 0.7, fill=True,
                     fc=HIGHLIGHT if count > ceil_div(FLOAT * width, SECTOR_BYTES) else "#9ecae1")
                ax.text(span // FLOAT + 1, r + 0.5, str(count), ha="left", va="center", fontsize=8.5)
            for x in range(0, span // FLOAT + 1, SECTOR_BYTES // FLOAT):
                ax.axvline(x, color="0.5", lw=0.6)
            ax.set_ylabel("row")
            ax.set_xlabel("float offset of the row's start\nwithin its 128-byte line")
        fig.suptitle(f"{spec.label}, n = {n}: {width} floats of each row\n(numbers: the sectors "
                     "each row's read touches; red: one more than needed;\ngrey lines: 32-byte "
                     "sectors)", fontsize=9.5)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


# Chapter 8, step 1: float4 loads of A, stored transposed ----------------------------------------

def transposed_tile(spec, rows: int = 16, threads: int = 8):
    """08_vectorized.cu's copy of A's tile, its first ``rows`` rows: left, A in global memory, each
    of the first ``threads`` threads' float4 (LDG.128: four adjacent k's of one row) in its own
    colour; right, where those floats land in the k-major shared tile As[k][m] (a column each),
    and outlined the TM values of A one thread then reads for one k (LDS.128s)."""
    d = _defines(spec)
    bk, tm = d["BK"], d["TM"]
    per_row = bk // 4
    with plt.rc_context(STYLE):
        fig, (left, right) = plt.subplots(1, 2, figsize=(STYLE["figure.figsize"][0], 4.2),
                                          gridspec_kw={"width_ratios": [bk, rows]})
        _cells(left, rows, bk, f"A's tile in global memory\n({rows} of its {d['BM']} rows, BK = {bk})")
        _cells(right, bk, rows, f"As[k][m] in shared memory, k-major\n({rows} of its {d['BM']} columns)")
        for ax, r, c in ((left, rows, bk), (right, bk, rows)):
            for x in range(c + 1):
                ax.axvline(x, color="0.85", lw=0.6)
            for y in range(r + 1):
                ax.axhline(y, color="0.85", lw=0.6)
        for t in range(threads):
            r, c = t // per_row, 4 * (t % per_row)
            colour = f"C{t % 10}"
            _box(left, c, r, 4, 1, fill=True, fc=colour, alpha=0.75, ec="white")
            _box(right, r, c, 1, 4, fill=True, fc=colour, alpha=0.75, ec="white")
        shown = ceil_div(threads, per_row)
        left.set_yticks([r + 0.5 for r in range(shown)],
                        [", ".join(f"t{t}" for t in range(r * per_row, (r + 1) * per_row))
                         for r in range(shown)], fontsize=10)
        right.set_xticks([r + 0.5 for r in range(shown)], [f"m={r}" for r in range(shown)],
                         fontsize=10, rotation=90)
        _box(right, 0, 0, tm, 1, ec=HIGHLIGHT, lw=2.5)
        left.set_xlabel("k: one colour = one thread's\nfloat4 (LDG.128), 4 adjacent k's")
        right.set_xlabel(f"m; red: the {tm} values one thread reads\nat k = 0, adjacent (two LDS.128)")
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)


# Chapter 8: warp tiles and the cp.async pipeline ------------------------------------------------

def warp_layout(spec, lane: int = 0) -> dict:
    """08_warptile.cu / 08_async.cu's three levels: the warp owning each element of the block
    tile, and the elements lane ``lane`` of warp 0 computes (in every sub-tile)."""
    d = _defines(spec)
    bm, bn, wm, wn, tm, tn, wniter = (d[k] for k in ("BM", "BN", "WM", "WN", "TM", "TN", "WNITER"))
    wmiter = (wm * wn) // (WARP * tm * tn * wniter)
    wsubm, wsubn = wm // wmiter, wn // wniter
    warp = (np.arange(bm)[:, None] // wm) * (bn // wn) + np.arange(bn)[None, :] // wn
    trow, tcol = divmod(lane, wsubn // tn)
    mine = np.zeros((bm, bn), bool)
    for i in range(wmiter):
        for j in range(wniter):
            r, c = i * wsubm + trow * tm, j * wsubn + tcol * tn
            mine[r:r + tm, c:c + tn] = True
    return {"warp": warp, "warps": d["THREADS"] // WARP, "mine": mine, "wmiter": wmiter,
            "sub": (wsubm, wsubn), **d}


def warp_tiles(spec, lane: int = 0):
    """The block tile coloured by warp; warp 0's sub-tiles outlined; one lane's pieces in red."""
    lay = warp_layout(spec, lane)
    bm, bn = lay["BM"], lay["BN"]
    wsubm, wsubn = lay["sub"]
    with plt.rc_context(STYLE):
        width = STYLE["figure.figsize"][0]
        fig, ax = plt.subplots(figsize=(width, width * bm / bn + 1.1))
        _cells(ax, bm, bn, f"{spec.label}\n{lay['warps']} warps of {lay['WM']} x {lay['WN']}; "
                           f"warp 0 in {lay['wmiter']} x {lay['WNITER']} sub-tiles of {wsubm} x "
                           f"{wsubn};\nlane {lane} computes {lay['TM']} x {lay['TN']} in each (red)")
        ax.imshow(lay["warp"] % 8, cmap="Pastel2", vmin=0, vmax=8, extent=(0, bn, bm, 0),
                  interpolation="nearest")
        ax.imshow(np.where(lay["mine"], 1.0, np.nan), cmap="Reds", vmin=0, vmax=1.2,
                  extent=(0, bn, bm, 0), interpolation="nearest")
        for r in range(0, bm, lay["WM"]):
            for c in range(0, bn, lay["WN"]):
                _box(ax, c, r, lay["WN"], lay["WM"], lw=1.5)
        for i in range(lay["wmiter"]):
            for j in range(lay["WNITER"]):
                _box(ax, j * wsubn, i * wsubm, wsubn, wsubm, ls="--", lw=0.9)
        plt.close(fig)
    return check_readable(fig)


PIPELINES = {"08_async.cu": ("before", "cp.async copies"),
             "10_wgmma.cu": ("after", "bulk copies (cp.async.bulk; a stage's mbarrier counts its bytes)")}
"""How each pipelined kernel's main loop issues its next copy: 08_async.cu at the top of iteration t
(into the stage tile t - 1 left), 10_wgmma.cu after the iteration's wgmmas and barrier -- and what
does the copying."""


def pipeline_layout(spec, tiles: int = 8) -> list[dict]:
    """The ring of STAGES shared tiles of 08_async.cu or 10_wgmma.cu, iteration by iteration: the
    tile each stage holds, the one the FMAs or wgmmas read, the copies in flight while they do, and
    (10_wgmma.cu) the phase parity its mbarrier wait expects -- as the kernel's main loop issues
    them."""
    stages = _defines(spec)["STAGES"]
    issue, _ = PIPELINES[spec.source]
    held, steps = [None] * stages, []
    for t in range(min(stages - 1, tiles)):  # the prologue fills all stages but one
        held[t] = t
    for t in range(tiles):
        nxt = t + stages - 1
        if issue == "before" and nxt < tiles:
            held[nxt % stages] = nxt
        steps.append({"t": t, "computed": t % stages, "held": list(held), "parity": t // stages % 2,
                      "in_flight": [h for h in held if h is not None and h > t]})
        if issue == "after" and nxt < tiles:
            held[nxt % stages] = nxt
    return steps


def pipeline(spec, tiles: int = 8):
    """Iterations (columns) against stages (rows): which tile of K each stage holds; the one the
    FMAs (or wgmmas) read is dark, the copies still in flight are light."""
    steps = pipeline_layout(spec, tiles)
    stages = len(steps[0]["held"])
    issue, copies = PIPELINES[spec.source]
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(min(STYLE["figure.figsize"][0], 1.2 + 0.68 * tiles),
                                        1.2 + 0.55 * stages))
        _cells(ax, stages, tiles, wrap(f"{spec.label}: {stages} shared stages, {tiles} tiles "
                                       f"along K", 70) + "\n" + wrap(
                                  f"dark: the tile read at this iteration; light: {copies} still "
                                  "in flight", 70))
        ax.set_aspect("auto")
        for s in steps:
            for stage, tile in enumerate(s["held"]):
                if tile is None or tile < s["t"]:
                    continue
                now = stage == s["computed"]
                _box(ax, s["t"] + 0.05, stage + 0.08, 0.9, 0.84, fill=True,
                     fc="#08519c" if now else "#c6dbef", ec="none")
                ax.text(s["t"] + 0.5, stage + 0.5, f"tile {tile}", ha="center", va="center",
                        fontsize=8, color="w" if now else "k")
        ticks = [str(s["t"]) if issue == "before" else f"{s['t']}\nparity {s['parity']}" for s in steps]
        ax.set_xticks(np.arange(tiles) + 0.5, ticks, fontsize=8)
        ax.set_yticks(np.arange(stages) + 0.5, [f"stage {s}" for s in range(stages)])
        ax.set_xlabel("iteration t of the main loop" + ("" if issue == "before" else
                      "\n(and the phase parity its wait on the stage's mbarrier expects)"))
        plt.close(fig)
    return check_readable(fig)


def work_split_layout(tiles_m: int, tiles_n: int, steps: int, sms: int, splits: int,
                      shares: int | None = None) -> dict:
    """Chapter 9's three ways to share a GEMM among SMs, computed as 09_sgemm.cu and book.blas do
    it: the waves of one block per tile; split-K's slices of a tile's k-steps (no empty slice);
    stream-K's whole waves, then ``shares`` equal shares of the k-steps of the tiles left
    (streamk_layout and streamk_start)."""
    tiles = tiles_m * tiles_n
    wave = [t // sms for t in range(tiles)]
    per = ceil_div(steps, ceil_div(steps, min(splits, steps)))  # as book.blas.plans._launches
    size = ceil_div(steps, per)
    slices = [min(s // size, per - 1) for s in range(steps)]
    shares = min(tiles * steps, shares or sms)
    first = tiles // shares * shares
    work = (tiles - first) * steps
    owner = [next(p for p in range(shares) if work * p // shares <= g < work * (p + 1) // shares)
             for g in range(work)]
    split_tiles = {first + g // steps for g in range(work)
                   if len({owner[i] for i in range(g - g % steps, g - g % steps + steps)}) > 1}
    return {"tiles": tiles, "wave": wave, "waves": ceil_div(tiles, sms),
            "last_wave": tiles - (ceil_div(tiles, sms) - 1) * sms, "slices": slices, "per": per,
            "first": first, "shares": shares, "owner": owner, "split_tiles": sorted(split_tiles)}


def work_split(tiles_m: int = 4, tiles_n: int = 3, steps: int = 6, sms: int = 8, splits: int = 3):
    """Three stacked panels on a small GPU of ``sms`` SMs: the tiles of C by wave (the last wave
    leaves SMs idle), split-K's slices of one tile's k-steps, and stream-K's shares of the steps
    of the tiles the whole waves leave, with the tiles two shares split (the fix-up adds them)."""
    lay = work_split_layout(tiles_m, tiles_n, steps, sms, splits)
    colors = plt.get_cmap("tab10").colors
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(3, 1, figsize=(STYLE["figure.figsize"][0], 7.9),
                                 gridspec_kw={"height_ratios": [tiles_m + 1.2, 2.2, 3.2]})
        ax = axes[0]
        idle = sms - lay["last_wave"]
        _cells(ax, tiles_m, tiles_n, f"One block per tile: {lay['tiles']} tiles of C on {sms} SMs "
                                     f"= {lay['waves']} waves;\nthe last has {lay['last_wave']} "
                                     f"tiles, so {idle} SMs idle through it")
        for t, w in enumerate(lay["wave"]):
            last = w == lay["waves"] - 1
            _box(ax, t % tiles_n + 0.05, t // tiles_n + 0.05, 0.9, 0.9, fill=True,
                 fc=colors[w % 10], alpha=1.0 if last else 0.35, ec="none")
            ax.text(t % tiles_n + 0.5, t // tiles_n + 0.5, f"tile {t}\nwave {w}", ha="center",
                    va="center", fontsize=8)
        ax = axes[1]
        ax.set_title(f"Split-K ({lay['per']} slices): each tile's {steps} k-steps cut into slices, "
                     f"one block each;\n{lay['per']} x as many blocks, their partial sums added by "
                     f"a second kernel", fontsize=9)
        for s, sl in enumerate(lay["slices"]):
            _box(ax, s + 0.05, 0.1, 0.9, 0.8, fill=True, fc=colors[sl % 10], alpha=0.7, ec="none")
            ax.text(s + 0.5, 0.5, f"k{s}\nslice {sl}", ha="center", va="center", fontsize=8)
        ax.set_xlim(0, steps)
        ax.set_ylim(1, 0)
        ax.set_aspect("equal")
        ax.axis("off")
        ax = axes[2]
        first, owner = lay["first"], lay["owner"]
        left = lay["tiles"] - first
        ax.set_title(f"Stream-K: tiles 0 to {first - 1} go whole (the full waves); the "
                     f"{left} x {steps} k-steps of the\nother {left} tiles are cut into "
                     f"{lay['shares']} equal shares, one block each (colour: share); hatched "
                     f"tiles are split\nbetween shares, and a fix-up kernel adds their pieces",
                     fontsize=9)
        for g, p in enumerate(owner):
            i, k = divmod(g, steps)
            tile = first + i
            _box(ax, k + 0.05, i + 0.05, 0.9, 0.9, fill=True, fc=colors[p % 10], alpha=0.7,
                 ec="0.25", lw=0, hatch="//" if tile in lay["split_tiles"] else None)
            ax.text(k + 0.5, i + 0.5, f"share {p}", ha="center", va="center", fontsize=8)
        ax.set_yticks(np.arange(left) + 0.5, [f"tile {first + i}" for i in range(left)])
        ax.set_xticks(np.arange(steps) + 0.5, [f"k{s}" for s in range(steps)])
        ax.set_xlim(0, steps)
        ax.set_ylim(left, 0)
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        fig.tight_layout()
        plt.close(fig)
    return check_readable(fig)

