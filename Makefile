# The README's commands. Each one sets itself up (a virtual environment in .venv).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# -n auto: one worker per core; --dist loadfile keeps each notebook's cells in one worker, in order.
TEST := BOOK_SAVE_RESULTS=0 $(BIN)/python -m pytest --nbval --nbval-cell-timeout=900 -q \
	-n auto --dist loadfile --durations=15

.PHONY: test test-sweep test-all book lab gpu-book gpu-test prebuild clean

$(BIN)/.installed: requirements.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements.txt
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $@

# On a GPU machine: also the CUDA libraries CuPy loads (cuBLAS, NVRTC, ...), as pip packages.
$(BIN)/.gpu-installed: $(BIN)/.installed requirements-gpu.txt
	$(BIN)/pip install -q -r requirements-gpu.txt
	touch $@

## Run every test: tests/ plus every notebook re-executed and compared by nbval (results/ untouched).
## Each exhaustive sweep runs here by its representatives: one registered kernel per kernel
## function (tests/conftest.py's KERNEL_REPRESENTATIVES) on every size, in the check mode and in
## the NVRTC compile matrix; 2 of book.sgemm's 14 configurations on every plan, and the transposed
## operands' builds (TRANS_A, TRANS_B, both) once each. The sweeps' other cases (marked `sweep`:
## tile sizes, pads, splits, configurations, layouts, the held-out studies)
## are reported as skipped.
test: $(BIN)/.installed
	$(TEST)

## The sweeps' other cases only: with make test, every test once (CI runs both).
test-sweep: $(BIN)/.installed
	$(TEST) --sweep -m sweep

## Everything in one run: make test and make test-sweep together.
test-all: $(BIN)/.installed
	$(TEST) --sweep

## Build the HTML book from the notebooks' stored outputs (no GPU needed) into _build/html.
book: $(BIN)/.installed
	$(BIN)/python -m book.harness.site
	$(BIN)/jupyter-book build -W -n --keep-going .

## Open the notebooks in JupyterLab, from the same environment (installs JupyterLab once; as root,
## as GPU containers run, with --allow-root).
lab: $(BIN)/.installed
	$(BIN)/python -c "import jupyterlab" 2>/dev/null || $(BIN)/pip install -q jupyterlab==4.6.6
	cd notebooks && ../$(BIN)/jupyter lab $$([ "$$(id -u)" = 0 ] && echo --allow-root)

## On a GPU: compile every kernel book.sgemm may run into the book's cache (no call compiles then).
prebuild: $(BIN)/.gpu-installed
	$(BIN)/python -m book.blas.prebuild

## On a GPU: re-execute every notebook in place (saving results/), then rebuild the book.
gpu-book: prebuild
	$(BIN)/python -m book.harness.execute
	$(BIN)/python -m book.landing
	$(BIN)/python -m book.harness.site
	$(BIN)/jupyter-book build -W -n --keep-going .

## On a GPU: the tests, their sweeps and nbval on the GPU (results/ untouched).
gpu-test: prebuild
	$(TEST) --sweep

clean:
	rm -rf _build
