"""The "Your own data" page's snippets (``docs/guide/your-data.md``) run as they are (one per
model: fit, predict, save, load), so that they cannot rot. They use the packaged
all-MiniLM-L6-v2 and generated data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "docs" / "guide" / "your-data.md"
HEADING = "# Your own data"

_FENCE = re.compile(r"^(```|~~~)")


def python_blocks(text: str, heading: str = HEADING) -> list[tuple[int, str]]:
    """The ```python blocks of the section under ``heading`` (up to the next level-1 or -2
    heading outside a code block), as ``(first line number, code)``."""
    lines = text.splitlines()
    blocks: list[tuple[int, str]] = []
    inside_section = in_code = False
    language = ""
    start, body = 0, []
    for number, line in enumerate(lines, start=1):
        if _FENCE.match(line):
            if not in_code:
                in_code, language, start, body = True, line[3:].strip(), number + 1, []
            else:
                in_code = False
                if inside_section and language == "python":
                    blocks.append((start, "\n".join(body) + "\n"))
            continue
        if in_code:
            body.append(line)
        elif line.strip() == heading:
            inside_section = True
        elif inside_section and re.match(r"^#{1,2} ", line):
            break
    return blocks


def _snippets() -> list[tuple[int, str]]:
    if not README.is_file():
        return []
    return python_blocks(README.read_text(encoding="utf-8"))


def test_python_blocks_are_found_under_the_heading_only() -> None:
    text = (
        "# t\n```python\nno = 1\n```\n# Your own data\ntext\n```python\na = 1\n# not a heading\n"
        "```\n```bash\nls\n```\n~~~python\nb = 2\n~~~\n## Next\n```python\nno = 2\n```\n"
    )
    assert python_blocks(text) == [(8, "a = 1\n# not a heading\n"), (15, "b = 2\n")]


def test_the_readme_has_the_section() -> None:
    if not _snippets():
        pytest.fail(
            f"{README} has no ```python blocks under {HEADING!r}: paste the section (one "
            "snippet per model: fit, predict, save, load) into the page"
        )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("line", "code"),
    [pytest.param(line, code, id=f"your-data.md:{line}") for line, code in _snippets()],
)
def test_snippet_runs(
    line: int, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # snippets save models to relative paths
    namespace: dict = {"__name__": "__readme__"}
    exec(compile(code, f"{README}:{line}", "exec"), namespace)
