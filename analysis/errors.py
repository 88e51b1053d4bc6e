"""The one error type for bad input (a missing, truncated or foreign file; an empty directory),
and the one way an analysis command ends on an error.

Every analysis command (`python3 -m analysis.report`, `.runpage`, `.pilot`, ...) turns an
AnalysisError into one line on stderr, "<command>: <message>", and exit code 2, as attnlab does
for bad command lines and configs (core/util/exit_code.h). Its main is wrapped in `command_line`,
so that an output it cannot write (a file where a directory is needed, a read-only directory, a
full disk) is one line naming the path, exit code 1, never a traceback.
"""

import errno
import functools
import sys

EXIT_OK = 0
EXIT_FAILURE = 1    # a step that ran and failed (an attnlab command the analysis started)
EXIT_BAD_INPUT = 2  # input the analysis cannot use: attnlab's "usage or config error"


class AnalysisError(Exception):
    """Input the analysis cannot use; the message names the file and what was expected."""


def report_error(command, error, code=EXIT_BAD_INPUT):
    """Prints "<command>: <error>" on stderr and returns `code`, the command's exit code."""
    print(f"{command}: {error}", file=sys.stderr)
    return code


# What to do about an OSError, by errno, for the line that names it.
_HINTS = {
    errno.EEXIST: "a file is there where a directory is needed (give --out a directory)",
    errno.ENOTDIR: "a file is there where a directory is needed (give --out a directory)",
    errno.EISDIR: "a directory is there where a file is needed",
    errno.EACCES: "no permission (a read-only directory? give --out a writable one)",
    errno.EPERM: "no permission (a read-only directory? give --out a writable one)",
    errno.EROFS: "a read-only file system (give --out a writable directory)",
    errno.ENOSPC: "the disk is full",
    errno.ENOENT: "no such file or directory",
}


def describe_os_error(error):
    """'out/report: a read-only file system (give --out a writable directory) [EROFS]' for an
    OSError: its path, what the user can do, and the error's name."""
    path = error.filename if error.filename is not None else "?"
    if error.filename2 is not None:
        path = f"{path} -> {error.filename2}"
    reason = _HINTS.get(error.errno, error.strerror or str(error))
    return f"{path}: {reason} [{errno.errorcode.get(error.errno, error.errno)}]"


def command_line(prog, analysis_error_code=EXIT_BAD_INPUT):
    """Decorates a tool's main(argv=None) so that its errors end it with one line on stderr,
    '<prog>: <what>', and a non-zero exit code instead of a traceback."""
    def wrap(main):
        @functools.wraps(main)
        def run(*args, **kwargs):
            try:
                return main(*args, **kwargs)
            except AnalysisError as error:
                return report_error(prog, error, analysis_error_code)
            except OSError as error:
                return report_error(prog, describe_os_error(error), EXIT_FAILURE)
        return run
    return wrap
