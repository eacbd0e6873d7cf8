"""Java regular expressions (java.util.regex.Pattern) as Python `re` patterns, for ListTransactions v2.

KIP-1152's TransactionalIdPattern is a Java regex that must match the whole id (Matcher.matches()).
The common subset is the same in both languages; this module rewrites the constructs that differ and
rejects what it cannot express faithfully, so the broker answers INVALID_REGULAR_EXPRESSION rather
than silently matching something else:

  rewritten: \\Q...\\E quoting, (?<name>...) and \\k<name>, \\z and \\Z, \\h and \\v, \\e, \\0oct, \\x{h..h},
             POSIX classes \\p{Lower} \\p{Upper} \\p{Alpha} \\p{Digit} \\p{Alnum} \\p{Space} \\p{XDigit}
             \\p{Punct} (and \\P{..}), inline flags (?idmsux) without Java-only d/U
  rejected:  other \\p{..} classes, \\G \\R \\X \\b{g} \\cX, class unions/intersections ([a[b]], &&),
             Python-only syntax Java refuses ((?P<..>, (?P=..), (?#..)), {,n} quantifiers
Python 3.11's own possessive quantifiers and atomic groups accept Java's syntax unchanged.
"""

from __future__ import annotations

import re

_POSIX = {
    "Lower": "a-z", "Upper": "A-Z", "Alpha": "a-zA-Z", "Digit": "0-9", "Alnum": "a-zA-Z0-9",
    "Space": r" \t\n\x0b\f\r", "XDigit": "0-9a-fA-F", "Punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
}
_HORIZONTAL = r" \t\xa0\u1680\u180e\u2000-\u200a\u202f\u205f\u3000"
_VERTICAL = r"\n\x0b\f\r\x85\u2028\u2029"
_SIMPLE = {"z": r"\Z", "Z": r"(?=\n?\Z)", "e": r"\x1b"}
_REJECT_ESCAPES = set("GRXc")
_JAVA_FLAGS = set("idmsuxU")


class JavaRegexError(ValueError):
    """The pattern is not a valid Java regex, or uses a construct we cannot translate."""


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.i = 0
        self.out: list[str] = []
        self.in_class = False

    def run(self) -> str:
        while self.i < len(self.src):
            ch = self.src[self.i]
            if ch == "\\":
                self._escape()
            elif ch == "[":
                self._open_class()
            elif ch == "]" and self.in_class:
                self.in_class = False
                self._emit(ch, 1)
            elif ch == "(" and not self.in_class:
                self._group()
            elif ch == "{" and not self.in_class and self.src.startswith("{,", self.i):
                raise JavaRegexError(f"{{,n}} is not a Java quantifier (position {self.i})")
            elif ch == "&" and self.in_class and self.src.startswith("&&", self.i):
                raise JavaRegexError("character class intersections (&&) are not supported")
            else:
                self._emit(ch, 1)
        if self.in_class:
            raise JavaRegexError("unclosed character class")
        return "".join(self.out)

    def _emit(self, text: str, consumed: int) -> None:
        self.out.append(text)
        self.i += consumed

    def _open_class(self) -> None:
        if self.in_class:
            raise JavaRegexError("nested character classes (unions) are not supported")
        self.in_class = True
        # A leading ']' (after an optional '^') is a literal in both languages: copy it as one token.
        j = self.i + 1
        if self.src.startswith("^", j):
            j += 1
        if self.src.startswith("]", j):
            j += 1
        self._emit(self.src[self.i:j].replace("[]", "[\\]").replace("[^]", "[^\\]"), j - self.i)

    def _group(self) -> None:
        rest = self.src[self.i:]
        if rest.startswith(("(?P", "(?#")):
            raise JavaRegexError(f"{rest[:3]} is not Java syntax")
        m = re.match(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", rest)
        if m:
            self._emit(f"(?P<{m.group(1)}>", m.end())
            return
        m = re.match(r"\(\?([A-Za-z-]+)([:)])", rest)
        if m:
            flags = self._flags(m.group(1))
            if m.group(2) == ":":
                self._emit(f"(?{flags}:", m.end())
            else:
                self._emit(f"(?{flags})" if flags else "", m.end())
            return
        self._emit("(", 1)

    @staticmethod
    def _flags(flags: str) -> str:
        on, _, off = flags.partition("-")
        if not set(on + off) <= _JAVA_FLAGS:
            raise JavaRegexError(f"unknown inline flag in (?{flags})")
        if "d" in on + off or "U" in on:
            raise JavaRegexError("the d (UNIX_LINES) and U (UNICODE_CHARACTER_CLASS) flags are not supported")
        # Python matching is Unicode-aware already: u, and U turned off, change nothing.
        on, off = on.replace("u", ""), off.replace("u", "").replace("U", "")
        return on + ("-" + off if off else "")

    def _escape(self) -> None:
        if self.i + 1 >= len(self.src):
            raise JavaRegexError("pattern ends with a lone backslash")
        c = self.src[self.i + 1]
        if c == "Q":
            end = self.src.find("\\E", self.i + 2)
            literal = self.src[self.i + 2:] if end < 0 else self.src[self.i + 2:end]
            self._emit(re.escape(literal), (len(self.src) if end < 0 else end + 2) - self.i)
        elif c in ("p", "P"):
            self._property(c == "P")
        elif c == "k":
            m = re.match(r"\\k<([A-Za-z][A-Za-z0-9]*)>", self.src[self.i:])
            if not m:
                raise JavaRegexError("\\k must name a group: \\k<name>")
            self._emit(f"(?P={m.group(1)})", m.end())
        elif c in ("h", "H", "v", "V"):
            self._emit(self._whitespace_class(c), 2)
        elif c in _SIMPLE and not self.in_class:
            self._emit(_SIMPLE[c], 2)
        elif c == "e":
            self._emit(r"\x1b", 2)
        elif c == "0":
            self._octal()
        elif c == "x" and self.src.startswith("{", self.i + 2):
            self._hex_braced()
        elif c in _REJECT_ESCAPES or (c == "b" and self.src.startswith("{", self.i + 2)):
            raise JavaRegexError(f"\\{c} is not supported")
        else:
            self._emit(self.src[self.i:self.i + 2], 2)

    def _whitespace_class(self, c: str) -> str:
        body, negated = (_HORIZONTAL if c in "hH" else _VERTICAL), c.isupper()
        if not self.in_class:
            return ("[^" if negated else "[") + body + "]"
        if negated:
            raise JavaRegexError(f"\\{c} inside a character class is not supported")
        return body

    def _property(self, negated: bool) -> None:
        m = re.match(r"\\[pP]\{(?:Is)?([A-Za-z]+)\}", self.src[self.i:])
        if not m or m.group(1) not in _POSIX:
            raise JavaRegexError(f"unsupported character property {self.src[self.i:self.i + 12]!r}")
        body = _POSIX[m.group(1)]
        if self.in_class:
            if negated:
                raise JavaRegexError("negated \\P{..} inside a character class is not supported")
            self._emit(body, m.end())
        else:
            self._emit(("[^" if negated else "[") + body + "]", m.end())

    def _octal(self) -> None:
        m = re.match(r"\\0([0-3][0-7]{2}|[0-7]{1,2})", self.src[self.i:])
        if not m:
            raise JavaRegexError("\\0 must be followed by octal digits")
        self._emit(f"\\x{int(m.group(1), 8):02x}", m.end())

    def _hex_braced(self) -> None:
        m = re.match(r"\\x\{([0-9a-fA-F]{1,6})\}", self.src[self.i:])
        if not m or int(m.group(1), 16) > 0x10FFFF:
            raise JavaRegexError("\\x{...} must hold a code point in hex")
        self._emit(f"\\U{int(m.group(1), 16):08x}", m.end())


def compile_java_regex(pattern: str) -> re.Pattern[str]:
    """Compile a Java regex for full-match use (`.fullmatch`); JavaRegexError if invalid or untranslatable."""
    try:
        return re.compile(_Translator(pattern).run())
    except re.error as exc:
        raise JavaRegexError(f"invalid regular expression {pattern!r}: {exc}") from None
