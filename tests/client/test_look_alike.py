"""`look_alike.reads_as_hosted_ai`: the engine's refusal of names that pass for the hosted
AI (`reserved-name`) and the terminal client's mark of them, against the names the
audits passed and the ordinary names a rule too wide refused."""

from __future__ import annotations

import time

import pytest

from battleline_client.look_alike import reads_as_hosted_ai

# Each passed for the hosted AI in an audit or a re-test (the thirtieth and thirty-first,
# and the second re-test of the thirty-first: a dot or a star between the letters, a
# symbol after the number, V or five for 5, 1 for l, a combining i or vertical line).
PASSED_FOR_THE_AI = [
    "AI level 5", "ai LEVEL 3", "\uff21\uff29 level 5", "AI  level", "AIlevel 9", "AI level5",
    "\U0001d400\U0001d408 level 5", "A\ufe0fI level 5", "\u0410\u0406 level 5",
    "\u0391\u0399 level 5", "\u13aa\u0406 level 5", "\u0251\u026a level 5", "Al level 5",
    "[AI level 5]", "AI \u04c0evel 5", "A.I. level 1",
    "\u1d00\u026a \u029f\u1d07\u1d20\u1d07\u029f 5", "A\ua7ae level 5", "A\ua7fe level 5",
    "AI lvl 5", "AI 5", "AI-5", "AI 1", "AI 10", "AI \u00b9", "AI Lv 5", "AI Lv.5",
    "\U0001f170\U0001f178 level 5", "\U0001f150\U0001f158 level 5",
    "\U0001f170\U0001f178 \U0001f17b\U0001f174\U0001f185\U0001f174\U0001f17b 5",
    "\u318dAI level 5", "\ua78fAI level 5", "\u30fcAI level 5", "\u02bcAI level 5\u02bc",
    "\u0640AI level 5", "| AI level 5 |", "A\u2758 level 5", "A\u23d0 level 5",
    "A\uffe8 level 5", "A\u0964 level 5", "A\u2502 level 5", "A\u4e28 level 5",
    "A\U00010339 level 5", "A\u0627 level 5",
    "A\u00b7I level 5", "A\u2022I level 1", "A\u30fbI level 5", "A\u318dI level 3", "A\u00b7I 5",
    "AI 5 \U0001f916", "AI 5\u2019", "AI \u00ab5\u00bb", "A\U0001d159\U0001d159I level 5",
    "AI \u2605\u2605 level 5", "AI level \u00b7\u00b7 5", "AI level V", "AI \u277a",
    "AI level five", "AI 1evel 5", "AI leve1 5", "A \u20d2level 5", "A\u0365 level 5",
    # The thirty-second audit's re-test: "level" drawn in five unknown characters, then a
    # Roman number or nothing (they passed while a run was cut to three).
    "AI \u2502\u03b5\u02c5\u03b5\u2502 V", "AI \u2502\u03b5\u02c5\u03b5\u2502 \u2164",
    "AI \u2502\u03b5\u02c5\u03b5\u2502 IV", "AI \u2502\u03b5\u02c5\u03b5\u2502 X",
    "AI \u3163\u0454\u22ce\u0454\u3163 V",
    "AI \u0964\u025b\u2335\u025b\u0964 V", "AI \u23d0\u03b5\u2d60\u03b5\u23d0 \u2164",
    "A\u2502 \u2502\u03b5\u02c5\u03b5\u2502 V",
    "\u0410\u0406 \u2502\u03b5\u02c5\u03b5\u2502 \u2164",
    "AI \u2605\u2605\u2605\u2605\u2605 V",
    # Its second re-test: an A the rule does not know in front of the I, "lev", a number
    # word after "lvl" or "Lv.", "No." before the number.
    "\u15e9I level 5", "\u15e9I 5", "\u15e9\u2160 level 5", "AI lev 5", "AI Lev. 5", "AI lev5",
    "AI lvl five", "AI Lv. Five", "AI Lvl. Five", "AI No.5", "AI no. 5",
]
# Refused by a rule too wide (the thirty-first audit's re-tests: a name and an initial,
# "Ali V."), or close to those.
NAMES = [
    "Aila", "AI fan", "Level 5 AI", "Kai levels", "Mr AI level 5", "Aileen", "Aivi", "Jos\u00e9",
    "\u674e\u5c0f\u9f8d", "\u00c5sa", "Ali", "Alivia", "Aliviah", "Al Ivins", "Ai Ivi\u0107",
    "Ai Ivison", "Al Leveille", "Ai L\u00e9veill\u00e9", "Ai \u674e", "Al1ce", "Ai Lin",
    "A\u00efcha", "Alev", "Aili", "Aiden", "Aisha", "Ailsa", "Kai", "Alvin", "Alvi",
    "\u0410\u043b\u0438\u0441\u0430", "\u0623\u062d\u0645\u062f", "\u30a2\u30a4",
    "Ali V.", "Ali VI", "Al IV", "Aliv", "Ali Vi", "Ali 2", "Ai-Li", "Ali I",
    # "Ai" and a name in another script ("level" in five unknown characters and no
    # number reads as a name; the thirty-second audit's re-test found them refused).
    "Ai \u674e\u5c0f\u9f8d\u738b\u660e", "Ai \u5c0f\u6797\u3055\u304f\u3089",
    "Al \u7530\u4e2d\u592a\u90ce\u3055\u3093", "Ai \u30a2\u30a4\u30b3\u30bb\u30f3\u30bb\u30a4",
    # The second re-test: one letter of "level" known among unknown ones, names like "lvl
    # V" or "levi 2", "Aino".
    "Ai \u0418\u0432\u043b\u0435\u0432", "Al \u0418\u0432\u043b\u0435\u0432",
    "Ai \u0413\u043d\u0435\u0434\u0438\u0447", "Ai \u041b\u0435\u043d\u0438\u043d", "Ali Viv",
    "Ai Levi 2", "Aino", "Ali Lev 2",
]


@pytest.mark.parametrize("name", PASSED_FOR_THE_AI)
def test_a_name_drawn_as_the_hosted_ais_reads_as_it(name: str) -> None:
    assert reads_as_hosted_ai(name)


@pytest.mark.parametrize("name", NAMES)
def test_an_ordinary_name_does_not(name: str) -> None:
    assert not reads_as_hosted_ai(name)


# Unknown characters (a star, a CJK ideograph) beside the pattern's own: each run of them
# could be split between the pattern's places in many ways, and a 40-character name cost a
# second of the engine's CPU for every CreateMatch or JoinMatch that named it (the
# thirty-second audit). A run longer than six is read as six.
UNKNOWN_RUNS = [
    "A" + "\u2605" * 38 + "z", "A" + "\u2605" * 37 + "zz", "AI" + "\u2605" * 37 + "z",
    "A" + "\u674e" * 38 + "z", "A\u2605I" + "\u2605" * 36 + "z",
    "AI l" + "\u2605" * 35 + "z", "A" + "\u2605\u2605\u2605z" * 9 + "zz",
    # A numeral read as "viii" (U+2177) many times over after every way to read the runs.
    "a\u3316e\u3316\u2172" + "\u2177" * 34 + "n",
]


def test_a_name_full_of_unknown_characters_is_read_in_microseconds() -> None:
    """A security property (one client stalled every engine process), not a benchmark: the
    bound, 80 names within a tenth of a second, is about twenty times what they cost now,
    and a tenth of what one name of the audit's cost before."""
    started = time.process_time()
    verdicts = [reads_as_hosted_ai(name) for name in UNKNOWN_RUNS * 10]
    assert time.process_time() - started < 0.1
    assert not any(verdicts)


@pytest.mark.parametrize("name", [
    "AI l\u2605\u2605\u2605l 5", "AI \u2605\u2605\u2605\u2605\u2605 5",
    "A\u2605\u2605\u2605\u2605\u2605\u2605 5", "AI level \u2605\u2605\u2605\u2605 5",
    "AI " + "\u2605" * 30 + " V", "A" + "\u2605" * 30 + " 5",
])
def test_a_run_cut_to_six_unknowns_still_reads_as_the_ai(name: str) -> None:
    assert reads_as_hosted_ai(name)
