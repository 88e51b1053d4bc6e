"""Notes files (--notes) and the pages that carry them: a relative link in a notes file is
written from the notes file's directory and must resolve from the page's directory too; and
every relative link of every committed Markdown page under docs/ resolves."""

import re
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))

from analysis.errors import AnalysisError  # noqa: E402
from analysis.notes import read_notes, relink  # noqa: E402


def test_relative_links_move_from_the_notes_directory_to_the_page_directory(tmp_path):
    notes_dir, page_dir = tmp_path / "results", tmp_path / "results" / "sweep"
    text = ("See [the study](studies.md), [a figure](sweep/curve.png#top), "
            "![curve](other/a.png), [logs](sweep/evidence/) and [up](../README.md).")
    assert relink(text, notes_dir, page_dir) == (
        "See [the study](../studies.md), [a figure](curve.png#top), "
        "![curve](../other/a.png), [logs](evidence/) and [up](../../README.md).")


@pytest.mark.parametrize("link", ["https://example.org/a.md", "mailto:someone@example.org",
                                  "/etc/hosts", "#a-heading"])
def test_links_that_are_not_relative_paths_are_kept(tmp_path, link):
    text = f"[x]({link}) and [y](a.md)"
    assert relink(text, tmp_path, tmp_path / "page") == f"[x]({link}) and [y](../a.md)"


def test_a_page_beside_its_notes_keeps_them_as_written(tmp_path):
    text = "[a](a.md) ![b](dir/b.png)"
    assert relink(text, tmp_path, tmp_path) == text


def test_read_notes_names_a_missing_or_undecodable_file(tmp_path):
    with pytest.raises(AnalysisError, match=r"--notes .*absent\.md: cannot read it"):
        read_notes(tmp_path / "absent.md", tmp_path)
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"ok\n\xff\xfe")
    with pytest.raises(AnalysisError, match=r"--notes .*bad\.md: not UTF-8 at byte 3"):
        read_notes(bad, tmp_path)


def test_a_report_with_notes_from_another_directory_links_where_the_notes_do(tmp_path):
    (tmp_path / "studies.md").write_text("# Studies\n")
    notes = tmp_path / "sweep-notes.md"
    notes.write_text("\nThe warmup study in [studies.md](studies.md).\n\n")
    page = tmp_path / "sweep"
    text = read_notes(notes, page)
    assert text == "The warmup study in [studies.md](../studies.md)."
    assert (page / "../studies.md").resolve() == (tmp_path / "studies.md").resolve()


# [text](target) outside code: fenced blocks and inline code are dropped first.
_FENCED = re.compile(r"^```.*?^```", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK_TARGET = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def _relative_link_targets(markdown):
    text = _INLINE_CODE.sub("", _FENCED.sub("", markdown))
    return [t for t in _LINK_TARGET.findall(text)
            if not re.match(r"^(?:[a-z][a-z0-9+.-]*:|/)", t, re.I)]


def test_every_relative_link_in_the_docs_resolves():
    pages = sorted(ROOT.glob("docs/**/*.md"))
    assert len(pages) >= 10, pages
    broken = [f"{page.relative_to(ROOT)}: {target}"
              for page in pages for target in _relative_link_targets(page.read_text("utf-8"))
              if not (page.parent / target).exists()]
    assert not broken, "links that point at nothing:\n  " + "\n  ".join(broken)
