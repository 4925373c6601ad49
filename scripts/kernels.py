"""The Jupyter kernel that ``make test`` runs the chapters and the assignments with.

    python scripts/kernels.py DIR [NAME=VALUE ...]

One execution of each notebook checks three things at once: its outputs (nbval), that it needs
nothing but attnlib's wheel (as on Colab), and that its printed numbers hold on the plainest CPU
kernels (the ``NAME=VALUE`` pairs, ``make``'s ``PLAIN_CPU``: docs/reproducibility.md). So this
script

1. builds attnlib's wheel from a copy of the files it is made of (``python -m build --wheel
   --no-isolation``, offline, as ``make dist``) and installs it with ``pip install --no-deps
   --target DIR/site``;
2. writes the kernelspec ``DIR/share/jupyter/kernels/attnbook-wheel/kernel.json``: this
   environment's Python with ``PYTHONPATH=DIR/site`` (which comes before the editable install of
   the checkout) and the ``NAME=VALUE`` pairs in the kernel's environment.

``make test`` then runs pytest with ``JUPYTER_PATH=DIR/share/jupyter`` and
``ATTNBOOK_KERNEL=attnbook-wheel`` (conftest.py hands the name to nbval), and
``tests/test_package.py`` starts that kernel and checks where its attnlib comes from. The wheel is
rebuilt only when one of its files changed (their hash is kept in ``DIR/inputs.sha256``).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "attnbook-wheel"
#: What the wheel is built from (pyproject.toml's package-data says which files of attnlib/ go in).
INPUTS = ["pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "attnlib"]


def input_files() -> list[Path]:
    found = []
    for name in INPUTS:
        path = ROOT / name
        found += sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts) \
            if path.is_dir() else [path]
    return found


def digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for path in files:
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def install_wheel(folder: Path) -> Path:
    """Build the wheel and install it into ``folder/site`` unless it is current; return the site."""
    files, site, stamp = input_files(), folder / "site", folder / "inputs.sha256"
    key = digest(files)
    if site.is_dir() and stamp.is_file() and stamp.read_text() == key:
        return site
    shutil.rmtree(site, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        src, dist = Path(tmp) / "src", Path(tmp) / "dist"
        for path in files:  # a copy, so that the build leaves nothing in the checkout
            (src / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, src / path.relative_to(ROOT))
        subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                        str(dist), str(src)], check=True, capture_output=True, text=True)
        wheel, = dist.glob("attnlib-*.whl")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                        "--target", str(site), str(wheel)], check=True, capture_output=True, text=True)
    stamp.write_text(key)
    return site


def write_kernelspec(folder: Path, site: Path, env: dict[str, str]) -> Path:
    spec = folder / "share" / "jupyter" / "kernels" / NAME
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (attnlib from its wheel, plainest CPU kernels)",
        "language": "python",
        "env": {"PYTHONPATH": str(site), **env},
        "metadata": {"debugger": False},
    }, indent=1) + "\n")
    return spec


def main(argv: list[str]) -> int:
    if not argv or any("=" not in a for a in argv[1:]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    folder = Path(argv[0]).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(a.split("=", 1) for a in argv[1:])
    try:
        site = install_wheel(folder)
    except subprocess.CalledProcessError as e:
        print(f"kernels: building or installing attnlib's wheel failed:\n{e.stdout}{e.stderr}",
              file=sys.stderr)
        return 1
    spec = write_kernelspec(folder, site, env)
    print(f"kernels: {NAME} ({spec.relative_to(ROOT) if spec.is_relative_to(ROOT) else spec}): "
          f"attnlib from {site.name}/, {' '.join(argv[1:]) or 'default CPU kernels'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
