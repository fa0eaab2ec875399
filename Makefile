# The two commands of the README:
#   make book   set everything up, execute the lessons against the references, render the site
#   make test   set everything up and run the whole test suite (what CI runs)
# and, for learners:
#   make lab    set everything up and start JupyterLab on the repository, at lesson 0

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup book test lab starters clean

setup: $(STAMP)

# One pinned set (requirements/lock.txt) for everything but torch and Triton, which depend on
# the machine: a CPU machine gets torch 2.13 (a CPU build where pip finds one, e.g. on CI; PyPI's
# Linux wheel is a CUDA build that also runs on the CPU) and Triton 3.6 (the version on the lent
# GPU, whose interpreter the CPU checks use); a machine with an NVIDIA driver gets PyPI's CUDA
# build of torch and the Triton it pins.
$(STAMP): requirements/lock.txt requirements/browser.txt requirements/torch-cpu.txt requirements/torch-gpu.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
	    $(PY) -m pip install --quiet -r requirements/torch-gpu.txt; \
	else \
	    $(PY) -m pip install --quiet -r requirements/torch-cpu.txt; \
	fi
	$(PY) -m pip install --quiet -r requirements/lock.txt -r requirements/browser.txt
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (workshop)" >/dev/null
	touch $(STAMP)

book: setup
	$(PY) tools/build_book.py

test: setup
	$(PY) -m pytest

lab: setup
	$(VENV)/bin/jupyter lab --ServerApp.root_dir="$(CURDIR)" notebooks/00_foundations.ipynb  # root: kernels/ in reach

starters: setup
	$(PY) tools/make_starters.py

clean:
	rm -rf build _build book/lessons book/_generated
