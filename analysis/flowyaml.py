"""The YAML subset attnlab writes for readers: flow scalars, [lists] and {maps} on one line.

attnlab's manifest and its /config string attributes use YAML's flow style only (see
core/config/options.cpp: format_string and format_number), so this reader needs no YAML
library: plain scalars (numbers, true/false, null, words), double-quoted strings with
backslash escapes, and nested flow lists and maps.
"""

import re

_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_SPECIAL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
            "FALSE": False, "null": None, "Null": None, "NULL": None, "~": None,
            ".inf": float("inf"), "-.inf": float("-inf"), "inf": float("inf"),
            "-inf": float("-inf"), ".nan": float("nan"), "nan": float("nan")}
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/", "0": "\0", "r": "\r"}


class FlowError(ValueError):
    """Text outside the flow subset; the message gives the column."""


def plain_scalar(text):
    """The value of an unquoted scalar: int, float, bool, None or the text itself."""
    text = text.strip()
    if text in _SPECIAL:
        return _SPECIAL[text]
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


class _Reader:
    def __init__(self, text):
        self.text = text
        self.at = 0

    def fail(self, what):
        raise FlowError(f"column {self.at + 1}: {what} in {self.text!r}")

    def skip_spaces(self):
        while self.at < len(self.text) and self.text[self.at] in " \t":
            self.at += 1

    def peek(self):
        self.skip_spaces()
        return self.text[self.at] if self.at < len(self.text) else ""

    def value(self, stops):
        char = self.peek()
        if char == "[":
            return self.sequence()
        if char == "{":
            return self.mapping()
        if char == '"':
            return self.quoted()
        if char == "'":
            return self.single_quoted()
        start = self.at
        while self.at < len(self.text) and self.text[self.at] not in stops:
            self.at += 1
        return plain_scalar(self.text[start:self.at])

    def quoted(self):
        self.at += 1  # the opening quote
        out = []
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == '"':
                self.at += 1
                return "".join(out)
            if char == "\\":
                if self.at + 1 >= len(self.text):
                    self.fail("a backslash at the end")
                escaped = self.text[self.at + 1]
                if escaped not in _ESCAPES:
                    self.fail(f"unknown escape '\\{escaped}'")
                out.append(_ESCAPES[escaped])
                self.at += 2
            else:
                out.append(char)
                self.at += 1
        self.fail("an unterminated string")
        return None

    def single_quoted(self):
        self.at += 1
        out = []
        while self.at < len(self.text):
            char = self.text[self.at]
            if char == "'":
                if self.text[self.at + 1:self.at + 2] == "'":
                    out.append("'")
                    self.at += 2
                    continue
                self.at += 1
                return "".join(out)
            out.append(char)
            self.at += 1
        self.fail("an unterminated string")
        return None

    def sequence(self):
        self.at += 1
        items = []
        if self.peek() == "]":
            self.at += 1
            return items
        while True:
            items.append(self.value(",]"))
            char = self.peek()
            self.at += 1
            if char == "]":
                return items
            if char != ",":
                self.fail("expected ',' or ']'")

    def mapping(self):
        self.at += 1
        items = {}
        if self.peek() == "}":
            self.at += 1
            return items
        while True:
            self.skip_spaces()
            if self.peek() == '"':
                key = self.quoted()
            else:
                start = self.at
                while self.at < len(self.text) and self.text[self.at] not in ":,}":
                    self.at += 1
                key = self.text[start:self.at].strip()
            if self.peek() != ":":
                self.fail(f"expected ':' after the key '{key}'")
            self.at += 1
            items[key] = self.value(",}")
            char = self.peek()
            self.at += 1
            if char == "}":
                return items
            if char != ",":
                self.fail("expected ',' or '}'")


def parse_flow(text):
    """The value of one flow-style YAML value, e.g. '{a: 1, b: [x, "y z"]}' -> dict."""
    reader = _Reader(text)
    value = reader.value("")
    if reader.peek():
        reader.fail("unexpected text after the value")
    return value


def to_text(value):
    """A value as the short text a table shows (lists joined, floats without trailing zeros)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(to_text(item) for item in value) + "]"
    if value is None:
        return ""
    return str(value)
