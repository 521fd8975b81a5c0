#!/usr/bin/env bash
# Paper-profile runs of the heaviest pages on a GPU machine (issue 23), run from the repository root:
#
#     bash scripts/gpu_paper_runs.sh            # OUT=dir: where data/paper_runs.json and the notebooks go
#
# Uses .venv/bin/python when the tree carries a prepared venv, else python3 (torch and the book's
# requirements installed; the package is found under lib/). Installs nothing and needs no network
# (the Hugging Face libraries are kept offline; the stand-in data are in data/). The pages run
# cheapest first by their own estimates (seconds on 2 shared CPUs, divided by SPEEDUP) while they
# fit in BUDGET seconds; a page that would not fit is skipped and not recorded. SPEEDUP=3 is a guess
# (16 unshared cores before any GPU gain), not a measurement: each run prints its estimate over its
# wall time, the number to pass next time. Without .git, set ATTNFLOW_COMMIT to the tree's commit.
set -u
cd "$(dirname "$0")/.."
PY=python3
if [ -x .venv/bin/python ]; then PY=.venv/bin/python; fi
export PYTHONPATH="$PWD/lib${PYTHONPATH:+:$PYTHONPATH}"
export HF_DATASETS_OFFLINE=1 HF_HUB_OFFLINE=1 PYTHONHASHSEED=0
BUDGET=${BUDGET:-540}
SPEEDUP=${SPEEDUP:-3}
PAGES=(
    focus_dilution/cycle focus_dilution/finite_sample focus_dilution/pca_trajectories focus_dilution/robustness
    focus_dilution/real_text sharpening/real_squad sharpening/real_hatexplain sharpening/real_sva
)

if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi; else echo "gpu_paper_runs: no nvidia-smi here"; fi
echo "gpu_paper_runs: $("$PY" --version 2>&1) at $PY; budget ${BUDGET} s, speed-up ${SPEEDUP}"
# the hard stop: a little after the budget (the runner stops a cell at what is left of it), so that
# the copy below always happens; records are saved page by page, so a stop loses only the running page
timeout --signal=TERM --kill-after=20 $((${BUDGET%.*} + 40)) \
    "$PY" scripts/paper_runs.py --device cuda --budget "$BUDGET" --speedup "$SPEEDUP" "${PAGES[@]}"
rc=$?

if [ -n "${OUT:-}" ]; then
    dest=$(mkdir -p "$OUT" && cd "$OUT" && pwd)
    cp data/paper_runs.json "$dest/"
    if [ -d runs/paper ]; then
        (cd runs && find paper \( -name '*.ipynb' -o -name '*.claims.json' \) -exec cp --parents {} "$dest/" \;)
    fi
    echo "gpu_paper_runs: data/paper_runs.json and the executed notebooks copied to $dest"
fi
exit $rc
