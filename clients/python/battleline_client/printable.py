"""Text from a server is text: the client drops the control characters of every string it
receives, so an escape sequence a hostile server puts in any field (a card, an action, a
proof, an invite code, an error message) cannot drive the user's terminal (its title, its
clipboard, the screen). Line breaks stay only in a position (the rules-core notation, one
line per part): elsewhere they would let a server draw lines of its own inside the board.
The engine itself sends nothing else, so nothing changes for it; a clean string costs one
check in C."""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf.message import Message

# Letters Python calls printable that are drawn as nothing: the Hangul fillers, the blank
# Braille pattern, the combining grapheme joiner and Khmer's inherent vowels ("You" and a
# filler reads as "You"). The engine refuses names holding one; the clients drop them
# before telling a name from "you".
BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5")

# The fields whose text is several lines: MatchView.position, MatchRecord.position and
# SuggestRequest.position all hold the rules core's position notation.
MULTILINE_FIELDS = frozenset({"position"})


def plain(text: str) -> str:
    """`text` without its control (non-printable) characters, line breaks included: for
    one line of the other side's text (a name, an event)."""
    return text if text.isprintable() else "".join(ch for ch in text if ch.isprintable())


def plain_lines(text: str) -> str:
    """`text` without its control characters but its line breaks."""
    if text.replace("\n", "").isprintable():
        return text
    return "".join(ch for ch in text if ch.isprintable() or ch == "\n")


def printable(message: Message) -> None:
    """Drop the control characters of every string field of `message` (line breaks too,
    but in `MULTILINE_FIELDS`), in place, at every depth."""
    rewrite_strings(message, lambda field, text: (
        plain_lines(text) if field in MULTILINE_FIELDS else plain(text)))


def rewrite_strings(message: Message, rewrite: Callable[[str, str], str]) -> None:
    """Set every string field of `message`, at every depth, to ``rewrite(field name,
    text)``, which returns the text itself to leave it (a field unchanged is not set)."""
    for field, value in message.ListFields():
        if field.type == field.TYPE_STRING:
            if not field.is_repeated:
                if (new := rewrite(field.name, value)) is not value:
                    setattr(message, field.name, new)
                continue
            old = list(value)
            texts = [rewrite(field.name, text) for text in old]
            if any(a is not b for a, b in zip(texts, old, strict=True)):
                value[:] = texts
        elif field.type == field.TYPE_MESSAGE:  # (the protocol has no maps)
            for item in (value if field.is_repeated else [value]):
                rewrite_strings(item, rewrite)
