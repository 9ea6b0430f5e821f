"""What a display name reads as on a screen, so no player passes for the hosted AI.

The engine refuses a name that reads as the hosted AI's ("AI level N"), however its
letters are drawn; the terminal client marks a seat that is not the AI's (the view's
`hosted_ai`) but whose name reads as it, in case an engine let one through. Both ask
`reads_as_hosted_ai`. No table of look-alikes is complete: the engine's mark of the AI's
seat, not its name, is what a client trusts.
"""

from __future__ import annotations

import re
import unicodedata

from confusable_homoglyphs.confusables import confusables_data

# A character drawn like no ASCII letter or digit we know of: it may stand for an I (a
# vertical bar, a dandā, Gothic iuja), a letter of "level" or a separator (a middle dot, a
# star): the rule reads it as any of them.
UNKNOWN = "?"
_I = r"[i1?]"  # an I, an l, a 1, a | or a stroke of unknown reading
_WORDS = "one|two|three|four|five"
_NUMBER = rf"(?:\d|{_WORDS})"  # 5, five
_LEVEL = rf"(?:{_NUMBER}|[ivx]{{1,4}}(?![a-z]))"  # 5, V, five (a numeral of four at most)
_BARE = rf"(?:\d+|{_WORDS})(?![a-z])"  # (no V: "Ali V." is a name)
_WORD = rf"{_I} \?* [e?] \?* [v?] \?* [e?] \?* {_I}"  # "level", any letter of it unknown
# "AI level N" (or with no N), "AI lvl N", "AI lev N", "AI lv N", "AI N", "AI No. N", as
# `skeleton` writes them, unknown characters between any two of their letters (the
# thirtieth to thirty-second audits and their re-tests: each passed for the hosted AI);
# an unknown character in front of the I may be the A (`ᗩI level 5`). With no N, "level"
# must show two letters of its own: the lookahead finds two characters that are not
# unknown, and after "level" only unknown ones may come (else "Ai" and a five-letter name
# in another script, `Ai 小林さくら`, `Ai Ленин`, would read as the AI). After "lvl" or
# "lv" only a number counts ("Ali Viv" is a name), and "lev" is not "levi" ("Ai Levi 2").
# Names such as "Ali", "Alivia", "Ali V.", "Al Leveille", "Al1ce", "Ai 李" pass.
HOSTED_AI = re.compile(rf"""
    (?: \?? a | \? (?={_I}) ) \?* {_I} \?*
    (?: {_WORD} \?* {_LEVEL}
      | (?=\?*[^?]\?*[^?]) {_WORD} \?* $
      | {_I} \?* (?:[e?] \?* v \?* | v \?* (?:{_I} \?*)?) {_NUMBER}
      | (?:no \?*)? {_BARE}
    )""", re.VERBOSE)
LOOK_ALIKE_I = str.maketrans("l|", "ii")  # as a capital I is drawn in many fonts
# A Latin letter by its Unicode name, whatever its style: small capitals (`ᴀɪ ʟᴇᴠᴇʟ`),
# capital small capitals (`Ɪ`), epigraphic forms (`ꟾ`, I longa), negative squared and
# circled letters (`🅰🅸`), regional indicators. Unicode's confusables have none of these.
LATIN_LETTER = re.compile(
    r"(?:[A-Z]+ )*(?:LATIN (?:[A-Z]+ )*LETTER (?:SMALL CAPITAL )?|REGIONAL INDICATOR "
    r"SYMBOL LETTER )([A-Z])(?: |$)")


# A run of unknown characters is cut to six before matching: the pattern reads at most
# six of them in a row as letters (the I of AI and the five of "level"), and a run
# beside them may be of any length, so a longer run reads as six do. Uncut, the match
# backtracked over every way to share a long run among its places: a name of 38 stars
# cost a second of the engine's CPU (the thirty-second audit), under a millisecond cut.
_LONGEST_READ_RUN = 6
_LONG_UNKNOWN_RUN = re.compile(re.escape(UNKNOWN) + f"{{{_LONGEST_READ_RUN + 1},}}")


def reads_as_hosted_ai(name: str) -> bool:
    """Whether `name` reads as the hosted AI's on a screen."""
    cut = _LONG_UNKNOWN_RUN.sub(UNKNOWN * _LONGEST_READ_RUN, skeleton(name))
    return HOSTED_AI.match(cut) is not None


def skeleton(name: str) -> str:
    """What a name reads as on a screen: marks dropped (a variation selector, accents)
    unless drawn as a letter or a stroke (`_unmarked`), NFKC (full-width, styled,
    superscript), each character drawn like an ASCII letter or digit as that one (lower
    case; `l` and `|` as `i`), spaces and punctuation dropped, any other character as
    UNKNOWN; and nothing before the first ASCII letter or digit but one UNKNOWN (a Hangul
    middle dot or a bar in front of "AI level 5" is read past; `ᗩ` in front of "I" may be
    its A)."""
    bare = "".join(_unmarked(c) for c in unicodedata.normalize("NFKD", name))
    looks = "".join(map(_ascii_look, unicodedata.normalize("NFKC", bare)))
    start = next((i for i, c in enumerate(looks) if c.isascii() and c.isalnum()), len(looks))
    if start and looks[start - 1] == UNKNOWN:
        start -= 1
    return looks[start:].casefold().translate(LOOK_ALIKE_I)


def _unmarked(character: str) -> str:
    """A character with its marks dropped (a variation selector, an accent), but a mark
    drawn as a stroke of its own (an enclosing mark, a vertical line or an overlay: over a
    space it draws an I) as an UNKNOWN character."""
    category = unicodedata.category(character)
    if category not in ("Mn", "Me"):
        return character
    if latin := _latin_letter(character):  # a combining Latin letter: A and ͥ reads AI
        return latin
    name = unicodedata.name(character, "")
    if category == "Me" or "VERTICAL" in name or "OVERLAY" in name:
        return UNKNOWN
    return ""


def _ascii_look(character: str) -> str:
    """The ASCII letter, digit or `|` a character is drawn like (a digit of any script
    as its value); "" for a space or ASCII punctuation; else UNKNOWN."""
    if character.isascii():
        return character if character.isalnum() or character in ("|", UNKNOWN) else ""
    if unicodedata.category(character)[0] in "ZC":
        return ""
    if (digit := unicodedata.digit(character, None)) is not None:  # ➄, ❺, ⓹
        return str(digit)
    for homoglyph in confusables_data.get(character, ()):
        if len(homoglyph["c"]) == 1 and homoglyph["c"].isascii() and (
                homoglyph["c"].isalnum() or homoglyph["c"] == "|"):
            return str(homoglyph["c"])
    return _latin_letter(character) or UNKNOWN


def _latin_letter(character: str) -> str | None:
    """The Latin letter a character's Unicode name says it is (LATIN_LETTER), if any."""
    latin = LATIN_LETTER.match(unicodedata.name(character, ""))
    return latin[1] if latin else None
