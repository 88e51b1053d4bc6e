"""The one error type for bad input (a missing, truncated or foreign file; an empty directory).

`python3 -m analysis.report` turns it into one line on stderr and exit code 2, as attnlab does
for bad command lines and configs.
"""


class AnalysisError(Exception):
    """Input the analysis cannot use; the message names the file and what was expected."""
