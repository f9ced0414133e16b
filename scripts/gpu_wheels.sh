#!/usr/bin/env bash
# Wheels for a GPU machine that reaches no package registry (issue 26; docs/grpo.md "GPU").
#
#   scripts/gpu_wheels.sh list                  # the exact set, with versions (no network)
#   scripts/gpu_wheels.sh download [DIR]        # here: pip download --no-deps into DIR (.gpu-wheels)
#   scripts/gpu_wheels.sh install [DIR]         # there: into the machine's Python, keeping its torch
#   scripts/gpu_wheels.sh run [DIR] -- ARGS...  # there: install, then python -m benchmarks.bench_gpu ARGS
#
# The set is requirements/gpu.txt and everything it requires, at the versions the project is
# tested with (.venv), less torch, torchvision and vllm (scripts/gpu_closure.py). `download`
# fetches wheels only, for PYTHON_VERSION (default 3.12, the lent H200's) and PLATFORM (default
# manylinux_2_28_x86_64; pip also takes older manylinux tags); set PYTHON_VERSION to the
# GPU machine's Python (python3 -V there) when it is not 3.12. SKIP="numpy pillow" leaves
# names out (about 23 MiB) for a machine known to have them.
#
# `install` first shows the machine's own torch and transformers, then runs, with the
# machine's Python (PYTHON, default python3), pip install --no-index --find-links DIR -r
# requirements/gpu.txt: pip keeps every package already there at a version the file accepts
# (torch is not in it, so the machine's torch stays) and installs only what is missing or of
# another version (transformers 5.x, which the project's code needs). A lent machine is
# discarded after the session, so the packages go straight into its Python.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODE="${1:-list}"
[ $# -gt 0 ] && shift
DIR="$ROOT/.gpu-wheels"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then DIR="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; shift; fi
[ "${1:-}" = "--" ] && shift
PY="${PY:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
PYTHON_VERSION="${PYTHON_VERSION:-3.12}"
PLATFORM="${PLATFORM:-manylinux_2_28_x86_64}"
ABI="cp${PYTHON_VERSION/./}"

closure() {
  "$PY" "$ROOT/scripts/gpu_closure.py" "$ROOT/requirements/gpu.txt" | while read -r pin; do
    case " ${SKIP:-} " in *" ${pin%%==*} "*) ;; *) echo "$pin" ;; esac
  done
}

case "$MODE" in
  list)
    closure
    echo "# pip download --no-deps --only-binary=:all: --python-version $PYTHON_VERSION --abi $ABI" \
         "--implementation cp --platform $PLATFORM --platform manylinux2014_x86_64 -d $DIR" >&2
    ;;
  download)
    mkdir -p "$DIR"
    closure >"$DIR/requirements.txt"
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version "$PYTHON_VERSION" \
      --abi "$ABI" --abi abi3 --abi none --implementation cp --platform "$PLATFORM" \
      --platform manylinux2014_x86_64 --platform any -d "$DIR" -r "$DIR/requirements.txt"
    count=$(ls "$DIR"/*.whl | wc -l)
    size=$(du -sm "$DIR" | cut -f1)
    echo "$count wheels, ${size} MiB in $DIR (a run carries at most 64 MiB)"
    [ "$size" -le 64 ] || { echo "expected at most 64 MiB, got ${size} MiB" >&2; exit 1; }
    ;;
  install|run)
    [ -d "$DIR" ] || { echo "expected wheels in $DIR, found none; run scripts/gpu_wheels.sh download there first" >&2; exit 1; }
    SYS="${PYTHON:-python3}"
    echo "this machine: $("$SYS" -V)"
    "$SYS" -c 'import torch; print("its torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' \
      || { echo "expected the machine's own torch in $SYS, found none; this set never carries torch" >&2; exit 1; }
    "$SYS" -c 'import transformers; print("its transformers", transformers.__version__)' 2>/dev/null \
      || echo "its transformers: none (brought from $DIR)"
    "$SYS" -m pip install -q --no-index --find-links "$DIR" -r "$ROOT/requirements/gpu.txt"
    "$SYS" -c 'import torch, transformers, peft; print("using torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'
    if [ "$MODE" = run ]; then
      cd "$ROOT"
      PYTHONPATH="$ROOT" exec "$SYS" -m benchmarks.bench_gpu "$@"
    fi
    ;;
  *)
    echo "expected list, download, install or run, got '$MODE'; see the top of $0" >&2
    exit 2
    ;;
esac
