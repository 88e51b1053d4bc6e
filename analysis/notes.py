"""A notes file (--notes): the author's discussion that a generated page carries.

A notes file is Markdown that lives beside the pages (docs/results/<name>-notes.md) and is read
and linked from there, while the page that includes it may sit in another directory
(docs/results/<name>/report.md). Its relative links are written from the notes file's own
directory; `read_notes` rewrites them so that they resolve from the page's directory as well.
"""

import os
import pathlib
import re

from analysis.errors import AnalysisError

# A Markdown link or image target: ](target) or ](target#anchor), without a title.
_LINK = re.compile(r"(\]\()([^)\s#]*)((?:#[^)\s]*)?\))")
# Targets that are not paths relative to the notes file.
_NOT_RELATIVE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|/|$)", re.I)


def relink(text, notes_dir, page_dir):
    """`text` with every relative link target rewritten from `notes_dir` to `page_dir`."""
    notes_dir, page_dir = pathlib.Path(notes_dir), pathlib.Path(page_dir)
    if notes_dir.resolve() == page_dir.resolve():
        return text

    def rewrite(match):
        target = match.group(2)
        if _NOT_RELATIVE.match(target):
            return match.group(0)
        moved = pathlib.PurePath(os.path.relpath(os.path.normpath(notes_dir.resolve() / target),
                                                 page_dir.resolve())).as_posix()
        if target.endswith("/"):
            moved += "/"  # a directory link stays one
        return match.group(1) + moved + match.group(3)

    return _LINK.sub(rewrite, text)


def read_notes(path, page_dir):
    """The text of the notes file `path` (stripped), its links resolving from `page_dir`."""
    path = pathlib.Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AnalysisError(f"--notes {path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise AnalysisError(f"--notes {path}: not UTF-8 at byte {error.start}") from None
    return relink(text.strip(), path.parent, page_dir)
