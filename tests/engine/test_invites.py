"""Invite codes are typed by people and passed as command-line arguments."""

from __future__ import annotations

from battleline_engine.seating import INVITE_ALPHABET, new_invite_code


def test_invite_codes_are_unambiguous_and_never_look_like_options() -> None:
    codes = {new_invite_code() for _ in range(2000)}
    assert len(codes) == 2000
    for code in codes:
        assert len(code) == 10 and set(code) <= set(INVITE_ALPHABET)
        assert not code.startswith("-")
    assert not set("01OI-_") & set(INVITE_ALPHABET)
