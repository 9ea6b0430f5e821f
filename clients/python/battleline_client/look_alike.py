"""What a display name reads as on a screen, so no player passes for the hosted AI.

The engine refuses a name that reads as the hosted AI's ("AI level N"), however its
letters are drawn; the terminal client marks a seat that is not the AI's (the view's
`hosted_ai`) but whose name reads as it, in case an engine let one through. Both ask
`reads_as_hosted_ai`.
"""

from __future__ import annotations

import re
import unicodedata

from confusable_homoglyphs.confusables import confusables_data

# "AI level N", "AI lvl N" or "AI N" as `skeleton` writes them (the thirtieth and
# thirty-first audits: each passed for the hosted AI on the other player's screen).
HOSTED_AI = re.compile(r"ai(?:ievei|ivi|\d)")
LOOK_ALIKE_I = str.maketrans("l1|", "iii")  # as a capital I is drawn in many fonts
# A Latin letter by its Unicode name, whatever its style: small capitals (`ᴀɪ ʟᴇᴠᴇʟ`),
# capital small capitals (`Ɪ`), epigraphic forms (`ꟾ`, I longa). Unicode's confusables
# have none of these.
LATIN_LETTER = re.compile(r"LATIN (?:[A-Z]+ )*LETTER (?:SMALL CAPITAL )?([A-Z])(?: |$)")


def reads_as_hosted_ai(name: str) -> bool:
    """Whether `name` reads as the hosted AI's on a screen."""
    return HOSTED_AI.match(skeleton(name)) is not None


def skeleton(name: str) -> str:
    """What a name reads as on a screen, in lower-case ASCII letters and digits: marks
    dropped (a variation selector), NFKC (full-width, styled), each letter that looks like
    an ASCII one as that one, `l`, `1` and `|` as `i`, and no spaces or punctuation (a
    re-test read "AI level 5" past a plain NFKC in each of these ways)."""
    bare = "".join(c for c in unicodedata.normalize("NFKD", name)
                   if unicodedata.category(c) not in ("Mn", "Me"))
    looks = "".join(map(_ascii_look, unicodedata.normalize("NFKC", bare)))
    return "".join(c for c in looks.casefold().translate(LOOK_ALIKE_I) if c.isalnum())


def _ascii_look(letter: str) -> str:
    """The ASCII letter or digit a character is drawn like, else the character: Unicode's
    confusables (Cyrillic, Greek, Cherokee...), else the Latin letter its name says."""
    if letter.isascii():
        return letter
    for homoglyph in confusables_data.get(letter, ()):
        if homoglyph["c"].isascii() and homoglyph["c"].isalnum():
            return str(homoglyph["c"])
    latin = LATIN_LETTER.match(unicodedata.name(letter, ""))
    return latin[1] if latin else letter
