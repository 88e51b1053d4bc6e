"""How numbers are written on every page the analysis makes, in one place: fixed decimals,
significant digits, exact counts, p-values and percentages. A missing or non-finite value is
written as `missing` ("" in tables that leave such cells empty, an en dash where the page says
"no value").
"""

import numpy as np

DASH = "–"


def finite(value):
    """True for a number (or numeric text) that is neither None, NaN nor infinite."""
    try:
        return value is not None and bool(np.isfinite(float(value)))
    except (TypeError, ValueError):
        return False


def fixed(value, decimals, sign=False, missing=""):
    """`value` with `decimals` digits after the point ("+4.1" with sign)."""
    if not finite(value):
        return missing
    return f"{float(value):{'+' if sign else ''}.{decimals}f}"


def significant(value, digits=3, missing=""):
    """`value` with `digits` significant digits (12.3, 0.00123, 1.23e+05)."""
    return f"{float(value):.{digits}g}" if finite(value) else missing


def count(value, missing=""):
    """An exact count with thousands separators (params are exact arithmetic)."""
    return f"{int(round(float(value))):,}" if finite(value) else missing


def scientific(value, missing=""):
    return f"{float(value):.2e}" if finite(value) else missing


def p_value(value, missing="n/a"):
    if not finite(value):
        return missing
    return "<0.001" if value < 0.001 else f"{value:.3f}"


def percent(fraction, decimals=0, sign=True, missing=""):
    """A fraction as a percentage: 0.041 -> "+4%"."""
    if not finite(fraction):
        return missing
    return f"{100 * float(fraction):{'+' if sign else ''}.{decimals}f}%"
