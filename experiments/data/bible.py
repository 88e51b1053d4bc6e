#!/usr/bin/env python3
"""Bible parallel corpus: World English Bible (en) <-> Reina-Valera 1909 (es), from SWORD packages.

Exports both modules with mod2imp, turns OSIS markup into plain text, aligns verses by reference,
drops the chapters whose versification differs between the modules, filters pairs by length ratio
and writes a fixed split by book as line-aligned files plus DATA_CARD.md.

    python3 experiments/data/bible.py --out data/bible            # full corpus (~31k pairs)
    python3 experiments/data/bible.py --out data/bible-slice --slice

Python 3 standard library only (and datacard.py beside it, shared with text.py); installs nothing
(`make deps` installs the SWORD packages).
"""

import argparse
import collections
import html
import math
import os
import re
import shutil
import statistics
import subprocess
import sys

from datacard import (CARD, checksum_section, files_match_card, read_card, token_stats,
                      write_atomic)

# Bumped whenever the cleaning or alignment changes, so existing outputs are rebuilt.
RECIPE_VERSION = 1

MODULES = {"en": "engWEB2015eb", "es": "spaRV1909eb"}
PACKAGES = "libsword-utils sword-text-web sword-text-sparv"
SWORD_CONF_DIR = "/usr/share/sword/mods.d"

# The 66 books both modules share, as mod2imp names them (WEB's deuterocanon is left out).
BOOKS = [
    "Genesis", "Exodus", "Leviticus", "Numbers", "Deuteronomy", "Joshua", "Judges", "Ruth",
    "I Samuel", "II Samuel", "I Kings", "II Kings", "I Chronicles", "II Chronicles", "Ezra",
    "Nehemiah", "Esther", "Job", "Psalms", "Proverbs", "Ecclesiastes", "Song of Solomon", "Isaiah",
    "Jeremiah", "Lamentations", "Ezekiel", "Daniel", "Hosea", "Joel", "Amos", "Obadiah", "Jonah",
    "Micah", "Nahum", "Habakkuk", "Zephaniah", "Haggai", "Zechariah", "Malachi",
    "Matthew", "Mark", "Luke", "John", "Acts", "Romans", "I Corinthians", "II Corinthians",
    "Galatians", "Ephesians", "Philippians", "Colossians", "I Thessalonians", "II Thessalonians",
    "I Timothy", "II Timothy", "Titus", "Philemon", "Hebrews", "James", "I Peter", "II Peter",
    "I John", "II John", "III John", "Jude", "Revelation of John",
]

# Fixed split by book: no near-duplicate gospel material crosses from train into test.
DEV_BOOKS = ["Esther", "Jonah", "Nahum", "Habakkuk", "Philippians", "Colossians", "James",
             "I Peter", "Hebrews"]
TEST_BOOKS = ["Ruth", "Ecclesiastes", "Daniel", "Micah", "John", "Romans"]
SLICE_SPLITS = {"train": ["Genesis", "Mark"], "dev": ["Jonah"], "test": ["Ruth"]}

# Epistles whose RV1909 text ends with a subscription ("Fué escrita de Corinto ...").
SUBSCRIBED = ["Romans", "I Corinthians", "II Corinthians", "Galatians", "Ephesians",
              "Philippians", "Colossians", "I Thessalonians", "II Thessalonians", "I Timothy",
              "II Timothy", "Titus", "Philemon", "Hebrews"]

# Chapters whose verse numbering differs between WEB (NRSVA) and RV1909 (Spanish numbering under a
# KJV label), as listed in corpora.md: verses are shifted or merged, so a join on the reference
# pairs different text. They are dropped whole; find_shifted_tail() finds the same kind in other
# chapters (Judges 11 and 14 in this module version).
KNOWN_SHIFTED_CHAPTERS = {
    "Numbers": [13, 30], "I Samuel": [24], "I Kings": [22], "I Chronicles": [21],
    "II Chronicles": [33], "Job": [39, 40], "Hosea": [12], "Jonah": [2],
}
# WEB folds Romans 16:25-27 into 14:23, so that verse holds more than its RV1909 twin.
MISMATCHED_VERSES = {("Romans", 14, 23)}

PSALM_119_LETTERS = ["ALEPH", "BETH", "GIMEL", "DALETH", "HE", "VAU", "ZAIN", "CHETH", "TETH",
                     "JOD", "CAPH", "LAMED", "MEM", "NUN", "SAMECH", "AIN", "PE", "TZADDI", "COPH",
                     "RESH", "SIN", "SCHIN", "TAU"]

# Length filter: keep a pair when its character-length ratio es/en lies within this many natural-log
# units of the corpus median ratio (1.0 = a factor of e either way).
MAX_LOG_RATIO_DEVIATION = 0.7
MIN_CHARS = 3


class DataError(Exception):
    """A problem with the environment or the modules, reported as one line."""


# ---------------------------------------------------------------------------------------------
# Export and parse
# ---------------------------------------------------------------------------------------------

def conf_path(module):
    """The module's SWORD .conf file (named as the module or in lower case), or None."""
    for name in (module + ".conf", module.lower() + ".conf"):
        path = os.path.join(SWORD_CONF_DIR, name)
        if os.path.exists(path):
            return path
    return None


def check_tools():
    if shutil.which("mod2imp") is None:
        raise DataError(f"mod2imp not found: run `make deps` (apt-get install {PACKAGES})")
    for lang, module in MODULES.items():
        if conf_path(module) is None:
            raise DataError(f"SWORD module {module} ({lang}) not installed (no {module}.conf in "
                            f"{SWORD_CONF_DIR}): "
                            f"run `make deps` (apt-get install {PACKAGES})")


def export_module(module):
    """The module as mod2imp prints it: `$$$Book C:V` header lines, each followed by OSIS text."""
    result = subprocess.run(["mod2imp", module], capture_output=True, check=False)
    if result.returncode != 0 or not result.stdout:
        raise DataError(f"mod2imp {module} failed (exit {result.returncode}): "
                        f"{result.stderr.decode('utf-8', 'replace').strip()}")
    return result.stdout.decode("utf-8")


HEADER = re.compile(r"^\$\$\$(.+) (\d+):(\d+)$")


def parse_imp(text):
    """{(book, chapter, verse): raw OSIS} for every verse entry; headings (C:0, V:0) included."""
    verses = {}
    key, lines = None, []
    for line in text.split("\n"):
        if line.startswith("$$$"):
            if key is not None:
                verses[key] = "\n".join(lines)
            match = HEADER.match(line)
            key = (match.group(1), int(match.group(2)), int(match.group(3))) if match else None
            lines = []
        elif key is not None:
            lines.append(line)
    if key is not None:
        verses[key] = "\n".join(lines)
    return verses


# ---------------------------------------------------------------------------------------------
# OSIS -> plain text
# ---------------------------------------------------------------------------------------------

NOTE = re.compile(r"\s*<note\b[^>]*>.*?</note>\s*", re.S)
NOTE_MARK = "\x00"  # where a note sat: a word boundary unless punctuation follows
NOTE_BEFORE_PUNCTUATION = re.compile(NOTE_MARK + r"+(?=[,.;:!?)\]”’»]|$)")
TITLE = re.compile(r"<title\b([^>]*)>(.*?)</title>", re.S)
BOOK_END = re.compile(r'<div\b[^>]*\beID="[^"]*"[^>]*type="book"[^>]*/>.*', re.S)
# Spanish object pronouns written as an added word right after a verb: sáca</w><transChange>lo.
ENCLITIC = re.compile(
    r"</w><transChange\b[^>]*>((?:me|te|se|nos|os)?(?:lo|la|los|las|le|les|me|te|se|nos|os))"
    r"</transChange>")
LAST_WORD = re.compile(r"(\w+)$")
# Words before such a pronoun that are not verbs: the pronoun stays a separate word there.
NOT_VERBS = {"y", "e", "que", "os", "no", "como", "cuánto", "ellos", "gentes", "josué", "jehová",
             "dios"}
# Tags that separate words even when no space surrounds them (lines, paragraphs, chapters).
BLOCK_TAG = re.compile(r"</?(?:l|lg|lb|div|chapter|milestone|list|item|p|title)\b[^>]*>")
ANY_TAG = re.compile(r"<[^>]*>")


def glue_enclitic(match):
    before = LAST_WORD.search(match.string, 0, match.start())
    if before is None or before.group(1).lower() in NOT_VERBS:
        return "</w> " + match.group(1)
    return match.group(1) + "</w>"


def osis_to_text(raw, drop_titles=False):
    """Plain text of one verse: notes dropped with their text, non-canonical titles dropped,
    word boundaries taken from the markup, entities decoded, whitespace collapsed."""
    text = BOOK_END.sub("", raw)  # WEB appends its glossary after Revelation 22:21
    text = NOTE.sub(NOTE_MARK, text)

    def title(match):
        canonical = 'canonical="true"' in match.group(1)
        return " " + match.group(2) + " " if canonical and not drop_titles else " "

    text = TITLE.sub(title, text)
    text = ENCLITIC.sub(glue_enclitic, text)
    # Adjacent word elements are separate words ("God</w><note/><w>created" -> "God created").
    text = re.sub(r"</(w|transChange)>(?=<(?:w|transChange)\b)", r"</\1> ", text)
    text = BLOCK_TAG.sub(" ", text)
    text = ANY_TAG.sub("", text)
    text = NOTE_BEFORE_PUNCTUATION.sub("", text.strip()).replace(NOTE_MARK, " ")
    text = html.unescape(text)
    return " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Reina-Valera 1909 typography
# ---------------------------------------------------------------------------------------------

LETTER_PREFIX = re.compile(r"^(?:" + "|".join(PSALM_119_LETTERS) + r")\.?\s+")
CAPS_WORD = re.compile(r"\b([A-ZÁÉÍÓÚÑÜ])([A-ZÁÉÍÓÚÑÜ]+)\b")


def word_case_counts(texts):
    """How often each word appears lowercase and capitalised: decides how a capitalised word is
    written when it does not open a sentence ("Y JEHOVÁ dijo" -> Jehová, "Y ACONTECIÓ" ->
    aconteció)."""
    words = collections.Counter(re.findall(r"\w+", "\n".join(texts)))
    counts = {}
    for word, n in words.items():
        if len(word) < 2 or word.isupper():
            continue
        lower, capital = counts.get(word.lower(), (0, 0))
        if word.islower():
            counts[word.lower()] = (lower + n, capital)
        elif word[0].isupper() and word[1:].islower():
            counts[word.lower()] = (lower, capital + n)
    return counts


def normalise_opening_capitals(text, case_counts):
    """RV1909 prints a chapter's (or Psalm 119 section's) first word in capitals: EN el principio.
    The first all-capital word of two or more letters followed by a word that is not capitals is
    rewritten: capitalised where it opens a sentence, else in its usual case in the corpus."""
    for match in CAPS_WORD.finditer(text):
        rest = text[match.end():].lstrip(" ,;:")
        following = re.match(r"\w+", rest)
        if following and following.group(0).isupper() and len(following.group(0)) > 1:
            return text  # an inscription in capitals (JEHOVÁ, JUSTICIA NUESTRA): keep as printed
        word = match.group(0)
        before = text[:match.start()].rstrip()
        opens_sentence = not before or before[-1] in ".:;!?¡¿(«“\"" or before.endswith("—")
        lower, capital = case_counts.get(word.lower(), (0, 0))
        if opens_sentence or capital > lower:
            new = word[0] + word[1:].lower()
        else:
            new = word.lower()
        return text[:match.start()] + new + text[match.end():]
    return text


def opens_with_common_word_in_capitals(text, case_counts):
    """A paragraph opening inside a chapter (Luke 1:5 "HUBO en los días"), not a name (JAH)."""
    match = re.match(r"^[¡¿(]?([A-ZÁÉÍÓÚÑÜ]{2,}) [a-záéíóúñü]", text)
    if not match:
        return False
    lower, capital = case_counts.get(match.group(1).lower(), (0, 0))
    return lower > capital


def drop_subscription(text):
    """RV1909's last verse of an epistle ends with where it was written: cut after the last Amén."""
    cut = text.rfind("Amén.")
    return text[:cut + len("Amén.")] if cut >= 0 else text


# ---------------------------------------------------------------------------------------------
# Verses per language
# ---------------------------------------------------------------------------------------------

def clean_module(verses, lang):
    """{(book, chapter, verse): plain text} for the 66 shared books, verse numbers >= 1."""
    books = set(BOOKS)
    out = {}
    for (book, chapter, verse), raw in verses.items():
        if book not in books or chapter < 1 or verse < 1:
            continue
        psalm_119 = book == "Psalms" and chapter == 119
        # WEB prints the Psalm 119 letter names as canonical titles; RV1909 inline ("ALEPH.").
        out[(book, chapter, verse)] = osis_to_text(raw, drop_titles=psalm_119)
    if lang == "es":
        case_counts = word_case_counts(out.values())
        last = {}
        for (book, chapter, verse), text in out.items():
            if text:
                last[book] = max(last.get(book, (0, 0)), (chapter, verse))
        for key in sorted(out):
            book, chapter, verse = key
            text = out[key]
            section_start = book == "Psalms" and chapter == 119 and verse % 8 == 1
            if section_start:
                text = LETTER_PREFIX.sub("", text)
            if verse == 1 or section_start or opens_with_common_word_in_capitals(text, case_counts):
                text = normalise_opening_capitals(text, case_counts)
            if book in SUBSCRIBED and (chapter, verse) == last[book]:
                text = drop_subscription(text)
            out[key] = text
    return out


# ---------------------------------------------------------------------------------------------
# Alignment
# ---------------------------------------------------------------------------------------------

def log_ratio(en_text, es_text):
    return math.log(len(es_text) / len(en_text))


def find_shifted_tail(chapter_pairs, median):
    """The first verse of a tail of the chapter that reads better shifted by one verse than as
    numbered, or None. Lengths are the signal: a verse's es/en length ratio stays near the corpus
    median when the two texts are translations of each other. A tail of >= 4 verse pairs whose
    deviation from the median drops below 0.6 of the unshifted deviation (which must exceed 0.2
    per pair) is a shift."""
    verses = sorted(chapter_pairs)
    for shift in (1, -1):
        # Suffix sums over verses (from the end) of both deviations, where both can be measured.
        tails = []
        count, as_numbered, as_shifted = 0, 0.0, 0.0
        for verse in reversed(verses):
            en_text, es_text = chapter_pairs[verse]
            shifted = chapter_pairs.get(verse + shift, ("", ""))[1]
            if en_text and es_text and shifted:
                count += 1
                as_numbered += abs(log_ratio(en_text, es_text) - median)
                as_shifted += abs(log_ratio(en_text, shifted) - median)
            tails.append((verse, count, as_numbered, as_shifted))
        for verse, count, as_numbered, as_shifted in reversed(tails):
            if count >= 4 and as_numbered > 0.2 * count and as_shifted < 0.6 * as_numbered:
                return verse
    return None


def align(en, es):
    """Verse pairs in book order and a log of what was dropped and why.

    Returns (pairs, report): pairs = [(book, chapter, verse, en_text, es_text)]; report holds
    dropped chapters (with reason), one-sided verses, merged verses and the length filter."""
    chapters = collections.defaultdict(dict)
    for key in set(en) | set(es):
        book, chapter, verse = key
        chapters[(book, chapter)][verse] = (en.get(key, ""), es.get(key, ""))
    both = [log_ratio(e, s) for verses in chapters.values() for e, s in verses.values() if e and s]
    median = statistics.median(both)

    # Everything left out, with its reason, so the data card can account for each split's books.
    report = {"median_log_ratio": median, "dropped_chapters": [], "dropped_verses": []}

    def drop_verse(book, chapter, verse, reason):
        report["dropped_verses"].append((book, chapter, verse, reason))

    order = {book: index for index, book in enumerate(BOOKS)}
    candidates = []
    for (book, chapter) in sorted(chapters, key=lambda bc: (order[bc[0]], bc[1])):
        verses = chapters[(book, chapter)]
        if chapter in KNOWN_SHIFTED_CHAPTERS.get(book, []):
            report["dropped_chapters"].append((book, chapter, "numbering differs (corpora.md)"))
            continue
        shifted_from = find_shifted_tail(verses, median)
        if shifted_from is not None:
            reason = f"verses shifted by one, seen from verse {shifted_from} on (detected)"
            report["dropped_chapters"].append((book, chapter, reason))
            continue
        last = max(verses)
        merged = set()
        for verse, (en_text, es_text) in verses.items():
            # An empty last slot on one side means its text was merged into the verse before.
            if verse == last and bool(en_text) != bool(es_text) and all(verses.get(verse - 1, "")):
                merged.add(verse - 1)
        for verse in sorted(verses):
            en_text, es_text = verses[verse]
            if not en_text and not es_text:
                continue
            if not (en_text and es_text):
                drop_verse(book, chapter, verse, "one_sided")
            elif verse in merged:
                drop_verse(book, chapter, verse, "merged")
            elif (book, chapter, verse) in MISMATCHED_VERSES:
                drop_verse(book, chapter, verse, "mismatched")
            elif min(len(en_text), len(es_text)) < MIN_CHARS:
                drop_verse(book, chapter, verse, "too_short")
            elif abs(log_ratio(en_text, es_text) - median) > MAX_LOG_RATIO_DEVIATION:
                drop_verse(book, chapter, verse, "length_ratio")
            else:
                candidates.append((book, chapter, verse, en_text, es_text))
    return candidates, report


# ---------------------------------------------------------------------------------------------
# Splits, files, data card
# ---------------------------------------------------------------------------------------------

def split_books(slice_only):
    if slice_only:
        return dict(SLICE_SPLITS)
    held_out = set(DEV_BOOKS) | set(TEST_BOOKS)
    return {"train": [b for b in BOOKS if b not in held_out], "dev": list(DEV_BOOKS),
            "test": list(TEST_BOOKS)}


def module_versions():
    """{module: Version} from the SWORD .conf files: part of what decides whether to rebuild."""
    versions = {}
    for module in MODULES.values():
        version = "unknown"
        with open(conf_path(module), encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith("Version="):
                    version = line.split("=", 1)[1].strip()
                    break
        versions[module] = version
    return versions


def output_names(splits):
    return [f"{split}.{lang}" for split in splits for lang in ("en", "es")]


CARD_STAMP = re.compile(r"^<!-- recipe (\d+); modules (.*) -->$", re.M)


def up_to_date(out_dir, splits, versions):
    """True when DATA_CARD.md was written by this recipe from these module versions and every
    output file still has the checksum it lists."""
    card = read_card(out_dir)
    if card is None:
        return False
    stamp = CARD_STAMP.search(card)
    if not stamp or stamp.group(1) != str(RECIPE_VERSION) or stamp.group(2) != repr(versions):
        return False
    return files_match_card(out_dir, card, output_names(splits))


def write_card(out_dir, splits, split_pairs, report, versions, slice_only):
    lines = [
        "# Bible parallel corpus: English (WEB) - Spanish (Reina-Valera 1909)" +
        (", small slice" if slice_only else ""),
        "",
        f"<!-- recipe {RECIPE_VERSION}; modules {versions!r} -->",
        "",
        "Made by `experiments/data/bible.py" + (" --slice" if slice_only else "") +
        "` from the Debian SWORD packages: "
        f"`{MODULES['en']}` (World English Bible, version {versions[MODULES['en']]}) and "
        f"`{MODULES['es']}` (Reina-Valera 1909, version {versions[MODULES['es']]}).",
        "One verse per line; `X.en` and `X.es` are line-aligned.",
        "",
        "## Licence",
        "Both modules declare `DistributionLicense=Public Domain` (/usr/share/sword/mods.d/). "
        "\"World English Bible\" is a trademark: this cleaned text is WEB-derived, not the WEB.",
        "",
        "## Cleaning",
        "- OSIS markup removed; word boundaries taken from the markup (`</w><w>` is a space).",
        "- Footnotes dropped with their text; non-canonical titles (headings) dropped; canonical "
        "Psalm titles kept (RV1909 prints them inside verse 1 too).",
        "- RV1909 enclitic pronouns marked as added words are glued to their verb "
        "(`sáca</w><transChange>lo` -> `sácalo`).",
        "- RV1909 chapter-initial capitals normalised (`EN el principio` -> `En el principio`, "
        "`Y ACONTECIÓ` -> `Y aconteció`, `Y JEHOVÁ` -> `Y Jehová`).",
        "- Psalm 119 letter names (ALEPH, BETH, ...) removed on both sides; RV1909 epistle "
        "subscriptions (`Fué escrita de Corinto ...`) removed; WEB's glossary after Revelation "
        "removed; WEB's 14 deuterocanonical books left out (66 books kept).",
        "",
        "## Alignment",
        "Verses are joined on their reference. Where the two modules number verses differently "
        "the chapter is dropped, not repaired:",
        "",
    ]
    books = {book for names in splits.values() for book in names}
    dropped = [c for c in report["dropped_chapters"] if c[0] in books]
    for book, chapter, reason in dropped:
        lines.append(f"- {book} {chapter}: {reason}")
    if not dropped:
        lines.append("- none in these books")
    reasons = collections.Counter(v[3] for v in report["dropped_verses"] if v[0] in books)
    lines += [
        "",
        "Verses dropped in these books:",
        f"- {reasons['one_sided']} present on one side only (e.g. WEB keeps Acts 8:37 only as a "
        "footnote; RV1909 moves Jonah 1:17 to 2:1)",
        f"- {reasons['merged']} before an empty last slot (their text absorbed the next verse)",
        f"- {reasons['mismatched']} known to hold extra text (WEB Romans 14:23 holds 16:25-27)",
        f"- {reasons['too_short']} shorter than {MIN_CHARS} characters",
        f"- {reasons['length_ratio']} whose es/en character-length ratio is more than a factor of "
        f"e^{MAX_LOG_RATIO_DEVIATION} away from the median ratio "
        f"({math.exp(report['median_log_ratio']):.3f})",
        "",
        "## Splits (by book)",
        "",
        "| split | pairs | en tokens | es tokens | en median / max | es median / max | books |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, books in splits.items():
        pairs = split_pairs[split]
        en_total, en_median, en_max = token_stats([p[3] for p in pairs])
        es_total, es_median, es_max = token_stats([p[4] for p in pairs])
        lines.append(f"| {split} | {len(pairs)} | {en_total} | {es_total} | "
                     f"{en_median} / {en_max} | {es_median} / {es_max} | {', '.join(books)} |")
    total = sum(len(p) for p in split_pairs.values())
    lines += ["", f"Total: {total} pairs. Tokens are whitespace-separated words.", ""]
    lines += checksum_section(out_dir, output_names(splits))
    lines.append("")
    write_atomic(os.path.join(out_dir, CARD), "\n".join(lines))


def build(out_dir, slice_only, log=print):
    check_tools()
    splits = split_books(slice_only)
    versions = module_versions()
    if up_to_date(out_dir, splits, versions):
        log(f"{out_dir}: up to date ({CARD} checksums match)")
        return False
    os.makedirs(out_dir, exist_ok=True)
    card_path = os.path.join(out_dir, CARD)
    if os.path.exists(card_path):
        os.unlink(card_path)  # the card marks a complete build: remove it until the build is
    en = clean_module(parse_imp(export_module(MODULES["en"])), "en")
    es = clean_module(parse_imp(export_module(MODULES["es"])), "es")
    pairs, report = align(en, es)
    split_pairs = {}
    for split, books in splits.items():
        wanted = set(books)
        split_pairs[split] = [p for p in pairs if p[0] in wanted]
        for lang, column in (("en", 3), ("es", 4)):
            text = "".join(p[column] + "\n" for p in split_pairs[split])
            write_atomic(os.path.join(out_dir, f"{split}.{lang}"), text)
    write_card(out_dir, splits, split_pairs, report, versions, slice_only)
    counts = ", ".join(f"{split} {len(p)}" for split, p in split_pairs.items())
    log(f"{out_dir}: wrote {counts} pairs")
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--slice", action="store_true",
                        help="only the small slice: train Genesis + Mark, dev Jonah, test Ruth")
    args = parser.parse_args(argv)
    try:
        build(args.out, args.slice)
    except DataError as error:
        print(f"bible.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
