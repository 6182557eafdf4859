"""Build and run the reference trec_eval 10.0 binary (for tests and benchmarks).

The source is NIST trec_eval 10.0 as a tarball (``../shared/reference/trec_eval-10.0.tar.gz``
beside the repository, or ``$PROBRANK_REFERENCE``). :func:`build_reference` compiles it with the
system C compiler into a cache folder, twice: as released, and with every printed value written
with ``%.17g`` instead of ``%6.4f`` (``precise=True``), so that probrank's values can be compared
with trec_eval's bit for bit rather than to the 4 printed decimals. Nothing here runs at import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from probrank.exceptions import InputDataError

__all__ = ["build_reference", "parse_output", "reference_tarball", "run_reference"]

_TARBALL = "trec_eval-10.0.tar.gz"
_PRINT_SOURCES = ("meas_print_final.c", "meas_print_single.c")


def reference_tarball() -> Path:
    """Where the trec_eval 10.0 source tarball is expected (it may not exist)."""
    root = os.environ.get("PROBRANK_REFERENCE")
    base = Path(root) if root else Path(__file__).resolve().parents[4] / "shared" / "reference"
    return base / _TARBALL


def build_reference(cache_dir: str | os.PathLike[str], *, precise: bool = False) -> Path:
    """Compile trec_eval 10.0 into ``cache_dir`` once and return the binary's path.

    Args:
        cache_dir: Folder for the build (reused on later calls; safe to share between
            processes: each builds in a temporary folder and renames it into place).
        precise: Print values with ``%.17g`` (round-trip precision) instead of ``%6.4f``.

    Raises:
        InputDataError: no tarball, or no working C compiler (the message says which).
    """
    name = "trec_eval-10.0" + ("-precise" if precise else "")
    target = Path(cache_dir) / name
    binary = target / "trec_eval"
    if binary.is_file():
        return binary
    tarball = reference_tarball()
    if not tarball.is_file():
        raise InputDataError(f"trec_eval source not found at {tarball} (set PROBRANK_REFERENCE)")
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None or shutil.which("make") is None:
        raise InputDataError("no C compiler or make on PATH to build trec_eval")
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=f".{name}.") as work:
        with tarfile.open(tarball) as archive:
            archive.extractall(work, filter="data")
        source = Path(work) / "trec_eval-10.0"
        if precise:
            for file in _PRINT_SOURCES:
                path = source / file
                path.write_text(path.read_text().replace("%6.4f", "%.17g"))
        result = subprocess.run(
            ["make", "-s", "-C", str(source), f"CC={compiler}"],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0 or not (source / "trec_eval").is_file():
            raise InputDataError(f"building trec_eval failed: {result.stderr.strip()[-500:]}")
        try:
            os.replace(source, target)
        except OSError:  # another process finished first
            if not binary.is_file():
                raise
    return binary


def run_reference(
    binary: str | os.PathLike[str], qrels: str | os.PathLike[str], run: str | os.PathLike[str],
    *options: str,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """Run trec_eval ``options qrels run`` and return the completed process (not checked)."""
    return subprocess.run(
        [str(binary), *options, str(qrels), str(run)],
        capture_output=True,
        text=True,
        check=False,
    )


def parse_output(text: str) -> dict[str, dict[str, str]]:
    """``{query id or 'all': {measure: printed value}}`` from trec_eval's output lines."""
    table: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 3:
            table.setdefault(parts[1], {})[parts[0]] = parts[2]
    return table
