#!/usr/bin/env bash
# The check on a lent GPU machine, in one command (the device tool of this workplace; see
# docs/bench.md): the kernels one forward launches, the test suite on CUDA, chapters 5, 7 and 9,
# and the GPU benchmark, each within a time limit so that one slow part leaves the others their
# results. From the repository
# root there, with the wheels of ../shared/gpu/wheels.sh carried in .gpu/:
#   bash bench/gpu_run.sh            (OUT: the folder whose files come back; END_S: seconds in all)
# Back here: python -m bench --merge-gpu RUN_DIR  (RUN_DIR: the bench/ folder that came back, with
# notebook_times.json and a tests.json summary beside bench.json), which rewrites results/bench.md.
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .gpu/whl/*.whl || exit 3
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
mkdir -p "$OUT/bench"
{
  date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "== kernels of one forward (bench/gpu_kernels.py)"
  MPLBACKEND=Agg timeout 90 python3 -m bench.gpu_kernels
  echo "== tests"; T0=$SECONDS
  # left out: what needs Chromium, nbgrader, bubblewrap or polib (the Chinese catalogues), none of
  # them on that machine. -v names each test as it ends, so a run cut off by its limit still says
  # which failed ($OUT/tests.log; the reasons come at its end, when it ends in time). 8 files come
  # back: run.log, tests.log, and bench/'s bench.json, bench.md, notebook_times.json, 3 chapters.
  MPLBACKEND=Agg timeout "${TESTS_S:-200}" python3 -m pytest -o addopts= -v -ra -n 16 -p no:cacheprovider \
    --tb=short tests --ignore=tests/test_book.py --ignore=tests/test_book_zh.py --ignore=tests/test_lab.py \
    --ignore=tests/test_assignments.py --ignore=tests/test_environment.py --ignore=tests/test_course.py \
    --ignore=tests/test_grading_sandbox.py --ignore=tests/test_package.py --ignore=tests/test_i18n.py \
    --ignore=tests/test_diagrams.py --continue-on-collection-errors > "$OUT/tests.log" 2>&1
  echo "tests rc=$? in $((SECONDS - T0)) s"; grep -E "(FAILED|ERROR) tests|[0-9]+ (passed|failed)" "$OUT/tests.log" | tail -40
  echo "== chapters"; T0=$SECONDS
  timeout "${NB_S:-150}" python3 -m bench.notebooks "$OUT/bench" ${CHAPTERS:-05 07 09}
  echo "chapters rc=$? in $((SECONDS - T0)) s"
  echo "== bench"; T0=$SECONDS
  MPLBACKEND=Agg timeout "$(( ${END_S:-540} - SECONDS ))" python3 -m bench --parts attention,training \
    --gpu-only --gpu-dtypes "${DTYPES:-bfloat16,float32}" --out "$OUT/bench"
  echo "bench rc=$? in $((SECONDS - T0)) s"
} 2>&1 | grep -v -E "^(USDT|WARNING: Location)" | tee "$OUT/run.log" | tail -c 11000
