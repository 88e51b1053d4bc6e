"""The one error type for bad input (a missing, truncated or foreign file; an empty directory),
and the one way an analysis command ends on an error.

Every analysis command (`python3 -m analysis.report`, `.runpage`, `.pilot`, ...) turns an
AnalysisError into one line on stderr, "<command>: <message>", and exit code 2, as attnlab does
for bad command lines and configs (core/util/exit_code.h).
"""

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
