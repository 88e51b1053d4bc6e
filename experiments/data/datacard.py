"""What the corpus scripts of experiments/data/ (bible.py, text.py) share: the data card's name and
its checksum table, whether the files a card lists still match it, whitespace-token statistics, and
writing a file atomically.

Python 3 standard library only.
"""

import hashlib
import os
import re
import statistics
import tempfile

CARD = "DATA_CARD.md"
# One row of a card's checksum table: | `train.en` | `<64 hex digits>` |
CARD_SUM = re.compile(r"^\| `([\w.-]+)` \| `([0-9a-f]{64})` \|$", re.M)


def sha256_file(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_card(out_dir):
    """The text of out_dir's data card, or None when there is none."""
    path = os.path.join(out_dir, CARD)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def files_match_card(out_dir, card, names):
    """True when the card lists a checksum for each of `names` and every file still has it."""
    sums = dict(CARD_SUM.findall(card))
    for name in names:
        path = os.path.join(out_dir, name)
        if name not in sums or not os.path.exists(path) or sha256_file(path) != sums[name]:
            return False
    return True


def checksum_section(out_dir, names):
    """The card's checksum section, as lines: a heading and one table row per file."""
    lines = ["## Checksums (sha256)", "", "| file | sha256 |", "|---|---|"]
    for name in names:
        lines.append(f"| `{name}` | `{sha256_file(os.path.join(out_dir, name))}` |")
    return lines


def token_stats(lines):
    """(total, median, max) of whitespace-separated words per line."""
    lengths = [len(line.split()) for line in lines]
    if not lengths:
        return 0, 0, 0
    return sum(lengths), int(statistics.median(lengths)), max(lengths)


def write_atomic(path, text):
    """Writes to a temporary name in the same directory, then renames: no half-written file. The
    file gets the permissions open() would give it (mkstemp makes it private to its owner)."""
    directory = os.path.dirname(path) or "."
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        os.fchmod(handle, 0o666 & ~umask)
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
