"""The one atomic writer: whole files or none, links followed, devices written in place, the
umask respected, no stray temporary files (also after ``kill -9``), missing folders refused."""

from __future__ import annotations

import gzip
import os
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from probrank._files import (
    atomic_open,
    remove_stale_temporaries,
    save_figure,
    temporary_path,
    write_atomically,
    write_bytes_atomically,
    write_text_atomically,
)
from probrank.data._io import atomic_write
from probrank.exceptions import InputDataError


@pytest.fixture
def umask() -> Iterator[None]:
    """Restore the process umask after a test that sets it."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_new_files_get_0666_less_the_umask_like_open(
    tmp_path: Path, umask: None, mask: int
) -> None:
    os.umask(mask)
    with open(tmp_path / "plain.txt", "w", encoding="utf-8") as handle:  # what open() gives
        handle.write("x")
    for name, write in (
        ("text.json", lambda p: write_text_atomically(p, "{}\n")),
        ("blob.pt", lambda p: write_atomically(p, lambda t: Path(t).write_bytes(b"1"))),
        ("run.txt.gz", lambda p: write_text_atomically(p, "q 0 d 1\n")),
    ):
        write(tmp_path / name)
        assert _mode(tmp_path / name) == 0o666 & ~mask == _mode(tmp_path / "plain.txt"), name


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path, umask: None) -> None:
    target = tmp_path / "secret.json"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o600)
    write_text_atomically(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert _mode(target) == 0o600


def test_a_failed_write_keeps_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = write_text_atomically(tmp_path / "r.txt", "old")

    def half_then_fail(temp: str) -> None:
        Path(temp).write_text("partial", encoding="utf-8")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(target, half_then_fail)
    with pytest.raises(RuntimeError, match="boom"), atomic_open(target) as out:
        out.write("partial")
        raise RuntimeError("boom")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def test_a_missing_folder_is_an_error_naming_the_path_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    target = tmp_path / "no" / "such" / "out.run"
    for write in (
        lambda: write_text_atomically(target, "x"),
        lambda: write_atomically(target, lambda t: Path(t).write_text("x")),
        lambda: atomic_write(target).__enter__(),
    ):
        with pytest.raises(InputDataError) as error:
            write()
        assert str(error.value) == f"{target}: output folder {str(target.parent)!r} does not exist"
    assert list(tmp_path.iterdir()) == []


def test_a_folder_or_a_file_used_as_folder_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(InputDataError, match="is a folder"):
        write_text_atomically(tmp_path / "dir", "x")
    (tmp_path / "file").write_text("keep", encoding="utf-8")
    with pytest.raises(InputDataError, match="not a folder"):
        write_text_atomically(tmp_path / "file" / "x.txt", "x")
    assert (tmp_path / "file").read_text(encoding="utf-8") == "keep"


def test_a_link_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real_dir = tmp_path / "real"
    real_dir.mkdir()
    real = real_dir / "results.txt"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_text_atomically(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text(encoding="utf-8") == "new"
    assert sorted(p.name for p in real_dir.iterdir()) == ["results.txt"]
    # a link to a file that does not exist yet creates that file, the link is kept
    dangling = tmp_path / "later.txt"
    dangling.symlink_to(real_dir / "later.txt")
    write_text_atomically(dangling, "made")
    assert dangling.is_symlink() and (real_dir / "later.txt").read_text() == "made"
    # a link into a missing folder is the missing-folder error
    broken = tmp_path / "broken.txt"
    broken.symlink_to(tmp_path / "gone" / "x.txt")
    with pytest.raises(InputDataError, match="does not exist"):
        write_text_atomically(broken, "x")


def test_a_device_is_written_in_place_and_never_replaced(tmp_path: Path) -> None:
    before = os.stat("/dev/null")
    write_text_atomically("/dev/null", "discarded")
    write_atomically("/dev/null", lambda t: Path(t).write_bytes(b"discarded"))
    with atomic_write("/dev/null") as out:
        out.write("discarded")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    # a FIFO: the reader gets the bytes through it, and it is still a FIFO afterwards
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    write_text_atomically(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert received == [b"through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    # /dev/stdout of a process whose stdout a shell redirected to a regular file (``> out``):
    # the bytes go down the redirection, appended after what the process printed before
    out = tmp_path / "out.txt"
    code = (
        "import sys; print('first', flush=True);"
        "from probrank._files import write_text_atomically;"
        "write_text_atomically('/dev/stdout', 'second\\n')"
    )
    with open(out, "w", encoding="utf-8") as redirected:
        inode = os.fstat(redirected.fileno()).st_ino
        subprocess.run([sys.executable, "-c", code], stdout=redirected, check=True)
    assert out.stat().st_ino == inode
    assert out.read_text(encoding="utf-8") == "first\nsecond\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "pipe"]


def test_gz_names_are_compressed_reproducibly(tmp_path: Path) -> None:
    text = "q1 Q0 d1 1 3.2800000000000002 t\n" * 50
    first = write_text_atomically(tmp_path / "a.run.gz", text)
    data = first.read_bytes()
    assert gzip.decompress(data).decode("utf-8") == text
    assert data[10:16] == b"a.run\x00"  # the name inside is the target's, not the temporary's
    with atomic_write(tmp_path / "a.run.gz") as out:
        out.write(text)
    assert first.read_bytes() == data  # no timestamp inside: same content, same bytes
    write_text_atomically(tmp_path / "b.run.gz", text)
    write_atomically(tmp_path / "c.bin.gz", lambda t: Path(t).write_bytes(b"\x00\x01" * 9))
    assert gzip.decompress((tmp_path / "c.bin.gz").read_bytes()) == b"\x00\x01" * 9
    write_bytes_atomically(tmp_path / "d.bin", b"raw")
    assert (tmp_path / "d.bin").read_bytes() == b"raw"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.run.gz",
        "b.run.gz",
        "c.bin.gz",
        "d.bin",
    ]


_KILLED_WRITER = """
import sys, time
from probrank._files import atomic_open
with atomic_open(sys.argv[1]) as out:
    out.write("new content that never finishes\\n" * 10000)
    out.flush()
    print("writing", flush=True)
    time.sleep(120)
"""


def test_kill_9_mid_write_keeps_the_old_file_and_a_later_write_removes_the_stray(
    tmp_path: Path,
) -> None:
    target = write_text_atomically(tmp_path / "results.json", "old\n")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, str(target)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "writing"
        (stray,) = [p for p in tmp_path.iterdir() if p.name != "results.json"]
        assert stray.name.startswith(f".results.json.probrank-{child.pid}-")
        assert stray.stat().st_size > 0
        # while the writer lives, another write to the target leaves its file alone
        write_text_atomically(target, "old\n")
        assert stray.exists()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        if child.stdout is not None:
            child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    assert target.read_text(encoding="utf-8") == "old\n"
    assert stray.exists()
    unrelated = tmp_path / ".results.json.probrank-notes"  # not a temporary name: kept
    unrelated.write_text("mine", encoding="utf-8")
    write_text_atomically(target, "newer\n")
    assert target.read_text(encoding="utf-8") == "newer\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".results.json.probrank-notes",
        "results.json",
    ]


def test_stale_temporaries_of_dead_processes_are_removed_but_held_ones_kept(
    tmp_path: Path,
) -> None:
    import fcntl

    target = tmp_path / "cache.pt"
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead = int(done.stdout)
    stale = target.with_name(f".cache.pt.probrank-{dead}-0123abcd.tmp")
    held = target.with_name(f".cache.pt.probrank-{dead}-4567cdef.tmp")
    other = target.with_name(f".other.pt.probrank-{dead}-0123abcd.tmp")  # another target's
    for path in (stale, held, other):
        path.write_bytes(b"partial")
    fd = os.open(held, os.O_RDONLY)  # a writer in another pid namespace would hold this lock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        assert remove_stale_temporaries(target) == [stale]
    finally:
        os.close(fd)
    assert held.exists() and other.exists()
    mine = temporary_path(target)
    assert mine.parent == tmp_path and mine.name.startswith(f".cache.pt.probrank-{os.getpid()}-")


def test_very_long_names_still_get_a_temporary_name_that_fits(tmp_path: Path) -> None:
    target = tmp_path / ("r" * 250)
    write_text_atomically(target, "x")
    assert len(temporary_path(target).name) < 255
    assert target.read_text(encoding="utf-8") == "x"


def test_save_figure_writes_a_png_and_closes_the_figure(tmp_path: Path) -> None:
    figure, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(figure, tmp_path / "f.png", dpi=50)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not plt.fignum_exists(figure.number)
    broken, _ = plt.subplots()
    with pytest.raises(ValueError):
        save_figure(broken, tmp_path / "g.png", dpi=-1)
    assert not plt.fignum_exists(broken.number)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]


def test_figure_writers_leave_pyplot_and_the_backend_alone(tmp_path: Path) -> None:
    # Experiments and the demo write figures from notebooks too: in a fresh interpreter whose
    # backend is 'svg' (standing in for an inline backend), writing the GPF demo's reliability
    # PNG and a demo bar chart must keep that backend and leave no pyplot figure open.
    code = (
        "import matplotlib; matplotlib.use('svg'); import matplotlib.pyplot as plt;"
        "from pathlib import Path;"
        "from probrank.demo.gpf import demo_section;"
        "from probrank.demo.plots import bar_chart;"
        f"folder = Path({str(tmp_path)!r});"
        "demo_section(folder, seed=0, quick=True);"
        "bar_chart({'a': {'P@5': 0.5}}, ['P@5'], 't', folder / 'b.png');"
        "print(matplotlib.get_backend(), len(plt.get_fignums()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env["OMP_NUM_THREADS"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert done.stdout.split()[-2:] == ["svg", "0"]
    for name in ("gpf_reliability.png", "b.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- through the CLI: ``probrank fuse -o`` ------------------------------------------------------


def _fuse_inputs(folder: Path) -> list[str]:
    qrels = folder / "qrels.txt"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n", encoding="utf-8")
    runs = []
    for name, scores in (("a", (3.0, 2.0, 1.0)), ("b", (1.0, 2.5, 0.5))):
        run = folder / f"{name}.run"
        lines = [
            f"q1 Q0 d1 1 {scores[0]} {name}",
            f"q1 Q0 d2 2 {scores[1]} {name}",
            f"q2 Q0 d3 1 {scores[2]} {name}",
        ]
        run.write_text("\n".join(lines) + "\n", encoding="utf-8")
        runs.append(str(run))
    return [str(qrels), *runs]


def test_fuse_output_to_a_device_a_link_and_a_missing_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from probrank.cli import main

    inputs = _fuse_inputs(tmp_path)
    code = main(["fuse", *inputs, "-o", "/dev/null"])
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    out = tmp_path / "out"
    out.mkdir()
    (out / "fused.run").write_text("old\n", encoding="utf-8")
    link = tmp_path / "latest.run"
    link.symlink_to(out / "fused.run")
    assert main(["fuse", *inputs, "-o", str(link)]) == 0
    assert link.is_symlink() and (out / "fused.run").read_text().startswith("q1 Q0 ")
    assert sorted(p.name for p in out.iterdir()) == ["fused.run"]
    capsys.readouterr()
    missing = tmp_path / "nowhere" / "fused.run"
    assert main(["fuse", *inputs, "-o", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("probrank: error: ")
    assert str(missing) in err and "does not exist" in err
    assert not (tmp_path / "nowhere").exists()
