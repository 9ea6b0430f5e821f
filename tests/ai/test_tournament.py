"""The tournament harness: statistics, the CLI's JSON, and the heuristic's margin over random."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from battleline_ai.tournament import elo, logged_games, paired, run, wilson
from battleline_client.cli import app


def test_wilson_and_elo() -> None:
    lo, hi = wilson(50, 100)
    assert 0.40 < lo < 0.41 and 0.59 < hi < 0.60
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] > 0.999
    assert elo(0.5) == 0.0
    assert 190 < elo(0.76) < 202


def test_cli_writes_json_with_counts(tmp_path: Path) -> None:
    out = tmp_path / "r" / "result.json"
    args = ["tournament", "--a", "heuristic", "--b", "random", "--games", "6"]
    result = CliRunner().invoke(app, [*args, "--json", str(out), "--workers", "2", "--seed", "3"])
    assert result.exit_code == 0, result.output
    assert "heuristic vs random" in result.output and "95% CI" in result.output
    data = json.loads(out.read_text())
    for key in ("a", "b", "games", "wins_a", "wins_b", "draws", "ci", "elo", "ruleset", "seed"):
        assert key in data
    assert (data["a"], data["b"], data["games"], data["seed"]) == ("heuristic", "random", 6, 3)
    assert data["wins_a"] + data["wins_b"] + data["draws"] == 6


def test_cli_refuses_bad_bot() -> None:
    result = CliRunner().invoke(app, ["tournament", "--a", "nobot", "--b", "random"])
    assert result.exit_code != 0


def test_games_are_reproducible_and_mirrored() -> None:
    first = run("heuristic:noise=0.2", "random", 4, "basic", workers=1, seed=9)
    again = run("heuristic:noise=0.2", "random", 4, "basic", workers=2, seed=9)
    assert (first.wins_a, first.wins_b, first.draws) == (again.wins_a, again.wins_b, again.draws)


def test_heuristic_beats_random_clearly() -> None:
    result = run("heuristic", "random", 40, "standard", workers=1, seed=2024)
    assert result.wins_a >= 36, result.summary()
    assert result.ci[0] > 0.8


def test_a_logged_run_cut_short_goes_on_where_it_stopped(tmp_path: Path) -> None:
    log = tmp_path / "games.jsonl"
    whole = run("heuristic:noise=0.5", "random", 8, "basic", seed=5)
    first = run("heuristic:noise=0.5", "random", 4, "basic", seed=5, log=log)
    assert len(log.read_text().splitlines()) == 4
    # Another run in the same log (other bots) is neither counted nor replayed.
    run("random", "random", 2, "basic", seed=5, log=log)
    resumed = run("heuristic:noise=0.5", "random", 8, "basic", seed=5, log=log)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    played = sorted(r["game"] for r in lines if r["a"] == "heuristic:noise=0.5")
    assert played == list(range(8))  # games 0-3 were not played twice
    counts = (resumed.wins_a, resumed.wins_b, resumed.draws)
    assert counts == (whole.wins_a, whole.wins_b, whole.draws)
    assert first.games == 4 and resumed.games == 8


def test_a_log_that_is_not_a_tournament_log_is_refused_in_one_line(tmp_path: Path) -> None:
    """Tenth audit: a crafted log (someone else's) crashed `--log` with a traceback on
    seven shapes of line. Each is now refused by the command in one line naming it; a
    blank line, as a hand edit leaves, is skipped."""
    good = {"a": "random", "b": "random", "ruleset": "basic", "seed": 5, "game": 0,
            "winner": 0, "actions": 40}
    bad_lines = ["[1, 2]", "7", json.dumps({**good, "a": None}),
                 json.dumps({k: v for k, v in good.items() if k != "game"}),
                 json.dumps({**good, "actions": "many"}), json.dumps({**good, "game": [0]}),
                 json.dumps({**good, "winner": "lots"}), "[" * 100_000, "{not json",
                 json.dumps(good).replace('"actions": 40', '"actions": ' + "9" * 400)]
    log = tmp_path / "games.jsonl"
    args = ["tournament", "--a", "random", "--b", "random", "--games", "2", "--ruleset",
            "basic", "--seed", "5", "--log", str(log)]
    for bad in bad_lines:
        log.write_text(json.dumps(good) + "\n" + bad + "\n")
        with pytest.raises(ValueError, match=r"games\.jsonl:2: not a game of a tournament"):
            logged_games(log, "random", "random", "basic", 5)
        result = CliRunner().invoke(app, args)  # a usage error, not a traceback
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), bad[:40]
        assert "not a game of a tournament log" in result.output
    directory = CliRunner().invoke(app, [*args[:-1], str(tmp_path)])  # fifteenth audit
    assert directory.exit_code == 2 and "Is a" in directory.output, directory.output
    assert isinstance(directory.exception, SystemExit)  # a usage error, not a traceback
    log.write_text(json.dumps(good) + "\n\n")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len([line for line in log.read_text().splitlines() if line]) == 2  # one played


def test_the_log_and_json_folders_are_made_before_the_games(tmp_path: Path) -> None:
    """A fresh user's walkthrough: `--json` in a new folder was made (after the games),
    `--log` there refused. Both folders are made first; one that cannot be (a file in its
    way) is refused in one line before a game is played."""
    log, out = tmp_path / "logs" / "new" / "games.jsonl", tmp_path / "results" / "r.json"
    args = ["tournament", "--a", "random", "--b", "random", "--games", "2", "--ruleset",
            "basic", "--log", str(log), "--json", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert log.read_text().count("\n") == 2 and json.loads(out.read_text())["games"] == 2
    (tmp_path / "taken").write_text("a file, not a folder")
    blocked = tmp_path / "taken" / "r.json"
    result = CliRunner().invoke(app, [*args[:-1], str(blocked)])
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    said = result.output
    assert "Not a directory" in said or "File exists" in said, said
    assert log.read_text().count("\n") == 2  # nothing played
    result = CliRunner().invoke(app, [*args[:-1], str(tmp_path)])  # a folder, not a file
    assert result.exit_code == 2, result.output
    assert "not a file this user may write" in result.output, result.output
    assert log.read_text().count("\n") == 2


def test_paired_counts_split_deals_and_an_exact_sign_test() -> None:
    x = {g: (0, 80) for g in range(20)}  # X won every deal
    y = {g: (0 if g < 7 else 1, 80) for g in range(20)}  # Y won the first 7
    y[25] = (0, 80)  # a deal X did not play: not compared
    y[3] = (None, 80)  # a draw splits nothing
    result = paired(x, y)
    assert (result.games, result.only_x, result.only_y) == (20, 13, 0)
    assert abs(result.p_value - 2 / 2 ** 13) < 1e-12
    # 9 against 4 (the session-7 pilot of c=0.2 against level 5): p = 2 * P(X <= 4), n = 13.
    nine_four = paired({g: (0 if g < 9 else 1, 1) for g in range(13)},
                       {g: (1 if g < 9 else 0, 1) for g in range(13)})
    assert (nine_four.only_x, nine_four.only_y) == (9, 4)
    assert abs(nine_four.p_value - 2 * 1093 / 8192) < 1e-12
    assert paired({}, {}).p_value == 1.0


def test_the_pool_of_a_tournament_leaves_ctrl_c_to_its_caller() -> None:
    """An audit of signals: the terminal's Ctrl-C reached `tournament --workers 2`'s pool
    workers too, and each printed a KeyboardInterrupt traceback as the command stopped."""
    import signal

    from battleline_ai.processes import spawned_pool

    # As in a terminal: a run in the background (`nohup`) ignores SIGINT, and so would
    # every process it starts, whatever the pool did.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with spawned_pool(1) as pool:
            handler = pool.apply(signal.getsignal, (signal.SIGINT,))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert handler == signal.SIG_IGN
