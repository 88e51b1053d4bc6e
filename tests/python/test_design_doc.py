"""docs/design.md against the tree: every file it names exists, its table of core/ layers holds
exactly the directories of core/, its top-level listing holds exactly the top-level directories,
and the test suites it says exist (tests/<layer>/) are the ones on disk. A file that was removed
may still be named where the page says so ("in the git history")."""

import re
import subprocess

from conftest import ROOT

DESIGN = ROOT / "docs" / "design.md"
TOP_DIRECTORIES = ("analysis", "bench", "cluster", "cmake", "core", "docs", "experiments", "fuzz",
                   "tests", "tools")


def tracked_top_directories():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    return {name.split("/")[0] for name in files if "/" in name and not name.startswith(".")}


def named_paths(text):
    """(line number, path) of each `path` in backticks under a top-level directory of the tree,
    without placeholders (<name>, {a,b}, *); "x.h/.cpp" names both files."""
    pattern = re.compile(r"`((?:%s)/[^`\s]*)`" % "|".join(TOP_DIRECTORIES))
    lines = text.splitlines()
    paragraph_start = 0
    for index, line in enumerate(lines):
        if not line.strip():
            paragraph_start = index + 1
            continue
        end = next((j for j in range(index, len(lines)) if not lines[j].strip()), len(lines))
        if "git history" in " ".join(lines[paragraph_start:end]):
            continue
        number = index + 1
        for path in pattern.findall(line):
            if re.search(r"[<>{}*]", path):
                continue
            stem, both, second = path.partition(".h/.")
            yield from ([(number, stem + ".h"), (number, stem + "." + second)] if both
                        else [(number, path)])


def test_every_file_the_design_names_exists():
    missing = [f"line {n}: {p}" for n, p in named_paths(DESIGN.read_text(encoding="utf-8"))
               if not (ROOT / p).exists()]
    assert not missing, "docs/design.md names files that are not in the tree:\n" + \
        "\n".join(missing)


def test_the_checker_sees_names_and_skips_placeholders():
    text = ("`core/a.h` and `core/b.h/.cpp`, `runs/<x>` `fuzz/<name>_fuzz.cpp`\n"
            "\n`core/gone.h` (removed) is\nin the git history\n")
    assert [p for _, p in named_paths(text)] == ["core/a.h", "core/b.h", "core/b.cpp"]


def section(text, title):
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_the_layer_table_is_the_directories_of_core():
    table = section(DESIGN.read_text(encoding="utf-8"), "Layers of core/").split("\n\n")
    table = next(part for part in table if part.startswith("| layer |"))
    layers = set(re.findall(r"^\| (\w+) \|", table, flags=re.M)) - {"layer"}
    directories = {p.name for p in (ROOT / "core").iterdir() if p.is_dir()}
    assert layers == directories


def test_the_top_level_listing_is_the_directories_of_the_tree():
    listing = section(DESIGN.read_text(encoding="utf-8"), "Top level")
    listed = set(re.findall(r"^(\w+)/\s", listing, flags=re.M))
    assert listed == set(TOP_DIRECTORIES) == tracked_top_directories()


def test_every_layer_but_app_has_its_test_suite():
    testing = section(DESIGN.read_text(encoding="utf-8"), "Testing")
    assert "every layer but app" in testing
    layers = {p.name for p in (ROOT / "core").iterdir() if p.is_dir()} - {"app"}
    assert all((ROOT / "tests" / layer / "CMakeLists.txt").is_file() for layer in layers)
    assert not (ROOT / "tests" / "app").exists()
