"""The committed Bible slice (tests/fixtures/bible) and experiments/data/bible.py that makes it."""

import hashlib
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "bible"
SCRIPT = ROOT / "experiments" / "data" / "bible.py"
SPLITS = ("train", "dev", "test")

sys.path.insert(0, str(SCRIPT.parent))
import bible  # noqa: E402


def lines(name):
    return (FIXTURE / name).read_text(encoding="utf-8").split("\n")[:-1]


@pytest.mark.parametrize("split", SPLITS)
def test_fixture_sides_are_line_aligned_and_nonempty(split):
    en, es = lines(f"{split}.en"), lines(f"{split}.es")
    assert len(en) == len(es) > 0
    assert all(line.strip() == line and line for line in en + es)


def test_fixture_sizes_match_the_slice_definition():
    # Genesis (1533 verses) + Mark (678) less the dropped ones; Jonah without chapter 2; Ruth.
    assert 2100 <= len(lines("train.en")) <= 2211
    assert 30 <= len(lines("dev.en")) <= 40
    assert 80 <= len(lines("test.en")) <= 85


@pytest.mark.parametrize("name", [f"{s}.{l}" for s in SPLITS for l in ("en", "es")])
def test_fixture_has_no_markup_left(name):
    text = (FIXTURE / name).read_text(encoding="utf-8")
    assert "<" not in text and ">" not in text
    assert not re.search(r"\b[GH]\d{3,4}\b|strong:", text)  # Strong's numbers
    assert not re.search(r"\d", text)  # no footnote references or verse numbers
    assert "&" not in text  # entities decoded


def test_fixture_cleaning_examples():
    en, es = lines("train.en"), lines("train.es")
    # Genesis 1:1: chapter-initial capitals normalised; note between words leaves a space.
    assert es[0] == "En el principio crió Dios los cielos y la tierra."
    assert en[0] == "In the beginning, God created the heavens and the earth."
    # Enclitics glued (Genesis 19:12 sáca</w><transChange>lo, Mark 6:16 oyéndo...lo).
    spanish = "\n".join(es)
    assert "sácalo" in spanish and "oyéndolo" in spanish
    assert "sáca lo" not in spanish
    # "Y ACONTECIÓ" opens many chapters: no capitalised word survives from it.
    assert "ACONTECIÓ" not in spanish and "Y aconteció" in spanish


def test_data_card_checksums_match_files():
    card = (FIXTURE / "DATA_CARD.md").read_text(encoding="utf-8")
    sums = dict(re.findall(r"^\| `([\w.]+)` \| `([0-9a-f]{64})` \|$", card, re.M))
    assert sorted(sums) == sorted(f"{s}.{l}" for s in SPLITS for l in ("en", "es"))
    for name, digest in sums.items():
        assert hashlib.sha256((FIXTURE / name).read_bytes()).hexdigest() == digest
    assert "Public Domain" in card


def test_osis_cleaning_rules():
    # Word boundaries from markup: a footnote between two words is a space, before punctuation
    # it is nothing; its text goes.
    raw = ('<w lemma="strong:H0430">God</w><note placement="foot">a note</note>'
           '<w lemma="strong:H1254">created</w> <w>it</w><note>x</note>.')
    assert bible.osis_to_text(raw) == "God created it."
    assert bible.osis_to_text('<w>sáca</w><transChange type="added">lo</transChange>') == "sácalo"
    assert (bible.osis_to_text('<w>Dios</w><transChange type="added">lo</transChange> '
                               '<w>permitiere</w>') == "Dios lo permitiere")
    assert (bible.osis_to_text('<w>siempre</w><transChange type="added">es</transChange>')
            == "siempre es")
    assert bible.osis_to_text('<title type="x-heading">Heading</title><w>Text</w>') == "Text"
    assert (bible.osis_to_text('<title canonical="true" type="psalm">A Psalm.</title> <w>Hi</w>')
            == "A Psalm. Hi")
    assert bible.osis_to_text("a &amp; b<lb/>c") == "a & b c"


def test_opening_capitals():
    counts = {"aconteció": (50, 1), "jehová": (0, 900)}
    assert bible.normalise_opening_capitals("EN el principio", counts) == "En el principio"
    assert bible.normalise_opening_capitals("Y ACONTECIÓ que", counts) == "Y aconteció que"
    assert bible.normalise_opening_capitals("Y JEHOVÁ dijo", counts) == "Y Jehová dijo"
    # An inscription in capitals stays as printed.
    assert (bible.normalise_opening_capitals("JEHOVÁ, JUSTICIA NUESTRA", counts)
            == "JEHOVÁ, JUSTICIA NUESTRA")


def test_shift_detection_finds_a_shifted_tail():
    texts = ["a" * n for n in (40, 90, 30, 120, 60, 80, 20, 100)]
    aligned = {v + 1: (texts[v], texts[v]) for v in range(8)}
    assert bible.find_shifted_tail(aligned, 0.0) is None
    # From verse 3 on, the Spanish side holds the next verse's text.
    shifted = {v + 1: (texts[v], texts[v] if v < 2 else texts[v + 1] if v + 1 < 8 else "")
               for v in range(8)}
    start = bible.find_shifted_tail(shifted, 0.0)
    assert start is not None and start <= 3


@pytest.mark.skipif(shutil.which("mod2imp") is None, reason="mod2imp not installed (make deps)")
@pytest.mark.slow
def test_script_slice_equals_fixture(tmp_path):
    out = tmp_path / "slice"
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--slice"], check=True)
    for name in [f"{s}.{l}" for s in SPLITS for l in ("en", "es")] + ["DATA_CARD.md"]:
        assert (out / name).read_bytes() == (FIXTURE / name).read_bytes(), name
    # A second run finds everything in place and writes nothing.
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    result = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out), "--slice"],
                            check=True, capture_output=True, text=True)
    assert "up to date" in result.stdout
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before


def test_missing_tools_give_a_make_deps_error(monkeypatch):
    monkeypatch.setattr(bible.shutil, "which", lambda name: None)
    with pytest.raises(bible.DataError, match="make deps"):
        bible.check_tools()
