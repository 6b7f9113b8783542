"""One number for each claim: every value a notebook glues as a claim (``glue(..., claim=...)``:
a kernel, a size, a GPU and a measure) has one value on every page that states it, and that value
is the ladder's record (``book.ladder.headline``), the one the landing page and the README print.
Read from the notebooks' stored outputs: no kernel runs."""
import json
from collections import defaultdict
from pathlib import Path

import pytest

from book import ladder

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def claims() -> dict:
    """{(kernel, n, GPU, measure): [(notebook, glue name, value), ...]} over every stored output."""
    found = defaultdict(list)
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text())["cells"]:
            for out in cell.get("outputs", []):
                meta = out.get("metadata", {})
                if "book_claim" in meta:
                    text = out["data"]["application/papermill.record/text/plain"]
                    found[tuple(meta["book_claim"])].append(
                        (path.stem, meta["scrapbook"]["name"], float(text)))
    return found


def test_the_headline_claims_are_keyed():
    """The chapters that state a kernel's headline figure state it as a claim."""
    keyed = {(kernel, measure) for kernel, _, _, measure in claims()}
    assert {("ozaki", "x_cublas"), ("tf32x3_wgmma", "x_cublas")} <= keyed


@pytest.mark.parametrize("key", sorted(claims()), ids=lambda k: "/".join(k))
def test_every_page_states_a_claim_with_the_ladder_s_value(key):
    kernel, n, gpu, measure = key
    said = claims()[key]
    gflops, pct = ladder.headline(kernel, gpu, int(n))
    want = {"gflops": gflops, "pct_of_cublas": pct, "x_cublas": pct / 100}[measure]
    for notebook, name, value in said:
        assert value == pytest.approx(want, rel=1e-9), (
            f"{notebook}'s {name} says {value} for {key}; the record says {want}")
