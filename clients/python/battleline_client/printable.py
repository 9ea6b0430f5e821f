"""Text from a server is text: the client drops the control characters of every string it
receives, so an escape sequence a hostile server puts in any field (a card, an action, a
proof, an invite code, an error message) cannot drive the user's terminal (its title, its
clipboard, the screen). Line breaks stay: a position is several lines. The engine itself
sends nothing else, so nothing changes for it; a clean string costs one check in C."""

from __future__ import annotations

from google.protobuf.message import Message


def plain(text: str) -> str:
    """`text` without its control (non-printable) characters, line breaks included: for
    one line of the other side's text (a name, an event)."""
    return text if text.isprintable() else "".join(ch for ch in text if ch.isprintable())


def plain_lines(text: str) -> str:
    """`text` without its control characters but its line breaks."""
    if not _has_controls(text):
        return text
    return "".join(ch for ch in text if ch.isprintable() or ch == "\n")


def printable(message: Message) -> None:
    """Drop the control characters but line breaks of every string field of `message`, in
    place, at every depth."""
    for field, value in message.ListFields():
        if field.type == field.TYPE_STRING:
            if not field.is_repeated:
                if _has_controls(value):
                    setattr(message, field.name, plain_lines(value))
            elif _has_controls("".join(value)):  # one check for the whole (usually clean) list
                value[:] = [plain_lines(text) for text in value]
        elif field.type == field.TYPE_MESSAGE:  # (the protocol has no maps)
            if field.is_repeated:
                for item in value:
                    printable(item)
            else:
                printable(value)


def _has_controls(text: str) -> bool:
    """Whether `text` holds a control character other than a line break (one pass in C)."""
    return not text.replace("\n", "").isprintable()
