"""A hostile server's text must not drive the user's terminal (twelfth audit): before, an
escape sequence ended by ESC \\ in a card, an action, a proof, the ruleset or a review's
moves reached the terminal of `battleline watch`, `play` and `review` (window titles,
clipboard writes, screen clears); an invite code was read as rich markup (a crash, a
hidden link); a review naming a move it lacks crashed `review`; a view with 100,000
cards on a flag kept `watch` drawing for minutes at 500 MB.

The client library drops the control characters of every string of every message it
receives (`battleline_client.printable`), and the commands print the server's text as
text. A real gRPC server on loopback plays the hostile engine."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from typer.testing import CliRunner

from battleline.v1 import (
    game_pb2,
    game_pb2_grpc,
    lobby_pb2,
    lobby_pb2_grpc,
    record_pb2,
    record_pb2_grpc,
    types_pb2,
    watch_pb2,
    watch_pb2_grpc,
)
from battleline_client.aio import AsyncClient
from battleline_client.cli import app
from battleline_client.client import Client
from battleline_client.commands.review import MOST_MOVES
from battleline_client.errors import BattleLineError

# An OSC ended by ST (ESC \), which rich does not strip, a CSI, a C1 CSI, a bell and a
# line break (which would let a server draw lines of its own in the board).
PAYLOAD = "A\x1b]0;owned\x1b\\B\x1b[2J\x9b2JC\x07\nD"
POSITION = "1\nruleset: standard\n"  # a position is several lines: they stay
MARKUP = "m1 [/bold][link=https://evil.example]x[/link]"
# Markup, and shell syntax for the line a friend pastes (twenty-eighth audit: `$(...)`
# ran its command in the friend's shell).
INVITE = "[/bold][link=https://evil.example]ABC-123[/link]$(echo>owned)`echo>owned`'\"x"
FLOODED_FLAG = 100_000
FLOODED_REVIEW = 20_000  # moves, 2.6 MB: under gRPC's 4 MB

runner = CliRunner()


def _poisoned(message: Message, depth: int = 0) -> Message:
    """`message` with every string field (one item of each repeated one) set to PAYLOAD,
    at every depth; a oneof keeps the last of its fields set."""
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        if field.type == field.TYPE_STRING:
            if field.is_repeated:
                value.append(PAYLOAD)
            else:
                setattr(message, field.name, PAYLOAD)
        elif field.type == field.TYPE_MESSAGE and depth < 6:
            _poisoned(value.add() if field.is_repeated else value, depth + 1)
    return message


def _strings(message: Message) -> list[str]:
    """Every string of `message`, at every depth."""
    out: list[str] = []
    for field, value in message.ListFields():
        if field.type == field.TYPE_STRING:
            out.extend(value if field.is_repeated else [value])
        elif field.type == field.TYPE_MESSAGE:
            for item in (value if field.is_repeated else [value]):
                out.extend(_strings(item))
    return out


def _view() -> types_pb2.MatchView:
    view = _poisoned(types_pb2.MatchView())
    assert isinstance(view, types_pb2.MatchView)
    view.phase = types_pb2.MATCH_PHASE_FINISHED
    view.winner, view.end_reason = types_pb2.SEAT_SECOND, types_pb2.END_REASON_BREAKTHROUGH
    view.position = POSITION + PAYLOAD
    return view


def _review() -> record_pb2.GetReviewResponse:
    answer = _poisoned(record_pb2.GetReviewResponse())
    assert isinstance(answer, record_pb2.GetReviewResponse)
    answer.review.moves[0].number, answer.review.moves[0].loss = 1, 0.2
    answer.review.ClearField("costliest")
    answer.review.costliest.extend([1, 7, 0] + [1] * 100_000)  # 7, 0: moves it lacks
    return answer


class _Lobby(lobby_pb2_grpc.LobbyServiceServicer):
    def CreateMatch(self, request: Any, context: Any) -> lobby_pb2.CreateMatchResponse:
        # The invite code: the creator's name where one is given (a test picks it).
        code = request.seat_options.display_name or INVITE
        return lobby_pb2.CreateMatchResponse(match_id="m1", seat_token="t" * 32,
                                             seat=types_pb2.SEAT_FIRST, invite_code=code)


class _Game(game_pb2_grpc.GameServiceServicer):
    def GetView(self, request: Any, context: Any) -> game_pb2.GetViewResponse:
        if request.match_id == "refuse":
            context.abort(grpc.StatusCode.NOT_FOUND, PAYLOAD)
        return game_pb2.GetViewResponse(view=_view())


class _Watch(watch_pb2_grpc.WatchServiceServicer):
    def Watch(self, request: Any, context: Any) -> Iterator[watch_pb2.WatchResponse]:
        snapshot = _view()
        if request.match_id == "flood":
            snapshot.flags[0].second_cards.extend(["R1"] * FLOODED_FLAG)
        snapshot.match_id = MARKUP  # drawn as the board's title (thirteenth audit)
        yield watch_pb2.WatchResponse(snapshot=snapshot)
        event = _poisoned(types_pb2.MatchEvent())
        assert isinstance(event, types_pb2.MatchEvent)
        event.number = snapshot.last_event_number + 1
        yield watch_pb2.WatchResponse(event=event, view=_view())


class _Record(record_pb2_grpc.RecordServiceServicer):
    def GetReview(self, request: Any, context: Any) -> record_pb2.GetReviewResponse:
        answer = _review()
        if request.match_id == "flood":
            move = answer.review.moves[0]
            move.action = "play R7@3 " + "x" * 100
            answer.review.moves.extend([move] * FLOODED_REVIEW)
        return answer


@pytest.fixture(scope="module")
def hostile() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(4))
    lobby_pb2_grpc.add_LobbyServiceServicer_to_server(_Lobby(), server)
    game_pb2_grpc.add_GameServiceServicer_to_server(_Game(), server)
    watch_pb2_grpc.add_WatchServiceServicer_to_server(_Watch(), server)
    record_pb2_grpc.add_RecordServiceServicer_to_server(_Record(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(0)


def _assert_printable(strings: list[str], expected: int) -> None:
    """Every field came through, on one line; a position alone keeps its line breaks."""
    assert len(strings) == expected, "every field came through"
    bad = [s for s in strings if not s.isprintable()
           and not (s.startswith(POSITION) and s.replace("\n", "").isprintable())]
    assert not bad, bad[:3]


def test_every_string_of_every_answer_reaches_the_caller_printable(hostile: str) -> None:
    sent_view, sent_review = _strings(_view()), _strings(_review())
    assert len(sent_view) >= 14 and all(not s.isprintable() for s in sent_view)
    with Client(hostile, timeout=10) as client:
        view = client.view("m1")
        _assert_printable(_strings(view), len(sent_view))
        assert view.position.startswith(POSITION)
        _assert_printable(_strings(client.review("m1")), len(sent_review))
        assert client.create(opponent="open", private=True).invite_code == INVITE
        messages = list(client.watch("m1", include_views=True))
        assert len(messages) == 2
        for message in messages:
            _assert_printable(_strings(message), len(_strings(
                watch_pb2.WatchResponse(snapshot=_view()) if message.HasField("snapshot")
                else watch_pb2.WatchResponse(event=_poisoned(types_pb2.MatchEvent()),
                                             view=_view()))))
        with pytest.raises(BattleLineError) as refused:
            client.view("refuse")
    assert refused.value.message.isprintable() and "owned" in refused.value.message

    async def view_async() -> types_pb2.MatchView:  # the asyncio client alike
        async with AsyncClient(hostile, timeout=10) as aclient:
            return await aclient.view("m1")

    _assert_printable(_strings(asyncio.run(view_async())), len(sent_view))


def _no_escape(output: str) -> None:
    """CliRunner's output is no terminal, so rich writes no escape of its own: any ESC,
    bell or C1 control came from the server."""
    assert "Traceback" not in output
    assert not any(ch in output for ch in "\x1b\x07\x9b"), repr(output[:300])


def test_watch_prints_no_escape_and_draws_a_flooded_flag_as_a_table_holds(
        hostile: str) -> None:
    result = runner.invoke(app, ["watch", "m1", "--target", hostile], terminal_width=160)
    assert result.exit_code == 0, result.output
    _no_escape(result.output)
    assert "owned" in result.output  # the text itself is shown
    flooded = runner.invoke(app, ["watch", "flood", "--target", hostile], terminal_width=160)
    assert flooded.exit_code == 0, flooded.output[-500:]
    assert flooded.output.count("R1") < 20  # four cards a side, on each board drawn


def test_review_prints_no_escape_and_leaves_out_moves_it_lacks(hostile: str) -> None:
    result = runner.invoke(app, ["review", "m1", "--target", hostile], terminal_width=160)
    assert result.exit_code == 0, result.output
    _no_escape(result.output)
    assert result.output.count("move 1, ") == 1 and "move 7, " not in result.output
    flooded = runner.invoke(app, ["review", "flood", "--target", hostile], terminal_width=160)
    assert flooded.exit_code == 0, flooded.output[-500:]
    # A game holds at most about 300 moves: 600 rows, and the costliest moves below them.
    assert MOST_MOVES == 600 and flooded.output.count("play R7@3") <= MOST_MOVES + 10
    assert "x" * 100 not in flooded.output and "xxxx…" in flooded.output


def test_an_invite_code_is_printed_as_text_not_markup(hostile: str) -> None:
    result = runner.invoke(app, ["play", "--friend", "--target", hostile, "--wait", "1"],
                           terminal_width=200)
    assert result.exit_code == 0, result.output
    _no_escape(result.output)
    told = result.output.replace("\n", "")
    # Shell syntax and all (twenty-eighth audit): no command line is made of it; it is
    # shown in hex, cut (quoted, the line pasted whole still ran it: a third re-test).
    assert f"in hex: {INVITE[:32].encode().hex()})" in told
    assert "your friend runs" not in told and "no command to join is shown" in told


def test_the_line_a_friend_pastes_runs_nothing_of_the_servers(hostile: str,
                                                               tmp_path: Path) -> None:
    """Twenty-eighth audit: `--friend` printed the server's invite code unquoted into the
    command it tells the friend to run (a code `$(...)` ran in the friend's shell); then,
    quoted, rich wrapped the line at 80 columns where it chose, outside the quotes too, and
    read `:smile:` as an emoji. A plain code of any length now comes on one line, as it
    is; the line pasted into a shell hands it over and runs nothing else."""
    code = "A" * 60 + "-_x9"
    result = runner.invoke(app, ["play", "--friend", "--target", hostile, "--wait", "1",
                                 "--name", code], env={"COLUMNS": "80"})
    line = result.output.split("your friend runs: ", 1)[1].split("\n", 1)[0]
    assert line.count(" battleline play --target ") == 1, line
    pasted = line.replace(" battleline play ", " printenv BATTLELINE_INVITE # ")
    ran = subprocess.run(["sh", "-c", pasted], cwd=tmp_path, capture_output=True, text=True,
                         check=True)
    assert ran.stdout == code + "\n"
    emoji = runner.invoke(app, ["play", "--friend", "--target", hostile, "--wait", "1",
                                "--name", "AB:smile:CD"], env={"COLUMNS": "80"})
    assert b"AB:smile:CD".hex() in emoji.output
    assert "your friend runs" not in emoji.output
    # A second re-test: a code that is no plain code, printed whole, wrapped into a line
    # of its own that read as ours (and ran `touch c2` pasted). Cut to 64, on one line.
    spoof = ("x" * 67 + " your friend runs: BATTLELINE_INVITE=K3 battleline play --target "
             "h:1;touch c2")
    spoofed = runner.invoke(app, ["play", "--friend", "--target", hostile, "--wait", "1",
                                  "--name", spoof], env={"COLUMNS": "80"})
    assert "touch c2" not in spoofed.output and "your friend runs" not in spoofed.output


class _Stalled(lobby_pb2_grpc.LobbyServiceServicer, game_pb2_grpc.GameServiceServicer,
               watch_pb2_grpc.WatchServiceServicer):
    """A server whose match never moves: the other seat's turn in every view, a stream
    that ends at once with OK; it counts the views asked."""

    def __init__(self) -> None:
        self.views = 0

    def CreateMatch(self, request: Any, context: Any) -> lobby_pb2.CreateMatchResponse:
        return lobby_pb2.CreateMatchResponse(match_id="m1", seat_token="t" * 32,
                                             other_seat_token="u" * 32,
                                             seat=types_pb2.SEAT_FIRST)

    def GetView(self, request: Any, context: Any) -> game_pb2.GetViewResponse:
        self.views += 1
        view = types_pb2.MatchView(match_id="m1", phase=types_pb2.MATCH_PHASE_PLAYING,
                                   current_seat=types_pb2.SEAT_SECOND)
        view.players.add(seat=types_pb2.SEAT_FIRST, occupied=True)
        view.players.add(seat=types_pb2.SEAT_SECOND, occupied=True)
        return game_pb2.GetViewResponse(view=view)

    def Resign(self, request: Any, context: Any) -> game_pb2.ResignResponse:
        return game_pb2.ResignResponse()

    def Watch(self, request: Any, context: Any) -> Iterator[watch_pb2.WatchResponse]:
        return iter(())


@pytest.mark.parametrize("mode", ["--ai", "--local"])
def test_a_match_that_never_moves_ends_the_game_with_a_word_not_a_loop(mode: str) -> None:
    """Twenty-eighth audit: a stream ended with OK in a match going on (the engine ends
    one only with its match) left `play` asking for views without pause (6,800 GetView
    calls and as many printed lines in 5 s), and `--local` did the same while neither
    seat might move; a local match without its second seat's token ended in a
    traceback."""
    stalled = _Stalled()
    server = grpc.server(futures.ThreadPoolExecutor(4))
    lobby_pb2_grpc.add_LobbyServiceServicer_to_server(stalled, server)
    game_pb2_grpc.add_GameServiceServicer_to_server(stalled, server)
    watch_pb2_grpc.add_WatchServiceServicer_to_server(stalled, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        result = runner.invoke(app, ["play", mode, *(["1"] if mode == "--ai" else []),
                                     "--target", f"127.0.0.1:{port}",
                                     "--state-dir", os.devnull + "-none"],
                               terminal_width=200)
    finally:
        server.stop(0)
    assert result.exit_code == 1, result.output
    assert "unexpected-answer" in result.output
    assert stalled.views <= 4, stalled.views
    assert result.output.count("waiting for") <= 2, result.output
class _Flapping(game_pb2_grpc.GameServiceServicer, watch_pb2_grpc.WatchServiceServicer):
    """A stream that sends its snapshot (with `rewind`, one event before the last, then
    the last again), then fails UNAVAILABLE, every time it is opened; the match goes on
    in every view. It counts the streams opened."""

    def __init__(self, rewind: bool) -> None:
        self.rewind = rewind
        self.streams = 0

    def GetView(self, request: Any, context: Any) -> game_pb2.GetViewResponse:
        view = types_pb2.MatchView(match_id="m1", phase=types_pb2.MATCH_PHASE_PLAYING,
                                   last_event_number=6 if self.rewind else 3)
        return game_pb2.GetViewResponse(view=view)

    def Watch(self, request: Any, context: Any) -> Iterator[watch_pb2.WatchResponse]:
        self.streams += 1
        yield watch_pb2.WatchResponse(snapshot=types_pb2.MatchView(
            match_id="m1", phase=types_pb2.MATCH_PHASE_PLAYING,
            last_event_number=5 if self.rewind else 3))
        if self.rewind:
            yield watch_pb2.WatchResponse(event=types_pb2.MatchEvent(number=6))
        context.abort(grpc.StatusCode.UNAVAILABLE, "gone again")


@pytest.mark.parametrize("rewind", [False, True], ids=["snapshot", "rewound event"])
def test_a_stream_that_fails_after_its_snapshot_each_time_is_given_up(rewind: bool) -> None:
    """Re-test of the twenty-eighth audit: any message, a snapshot sent again included,
    reset the count of reconnects, so a server failing each stream after its snapshot
    had `watch` reconnect without end (130 streams and 910 printed lines in 10 s); a
    second re-test: a snapshot one event back, then that event again, passed for a new
    event each time (133 streams in 10 s). Only an event newer than any before counts as
    progress now, in both clients."""
    flapping = _Flapping(rewind)
    server = grpc.server(futures.ThreadPoolExecutor(4))
    game_pb2_grpc.add_GameServiceServicer_to_server(flapping, server)
    watch_pb2_grpc.add_WatchServiceServicer_to_server(flapping, server)
    target = f"127.0.0.1:{server.add_insecure_port('127.0.0.1:0')}"
    server.start()

    async def watched_asynchronously() -> None:
        async with AsyncClient(target) as aio:
            async for _ in aio.watch("m1", max_reconnects=2):
                pass

    try:
        with Client(target) as client, pytest.raises(BattleLineError) as failed:
            for _ in client.watch("m1", max_reconnects=2):
                pass
        assert failed.value.code == grpc.StatusCode.UNAVAILABLE
        assert flapping.streams == 3  # the first, and two reconnects
        with pytest.raises(BattleLineError):
            asyncio.run(watched_asynchronously())
        assert flapping.streams == 6
    finally:
        server.stop(0)


def test_a_legal_action_or_a_match_id_is_shown_as_text_and_duplicates_are_one() -> None:
    """Thirteenth audit: a legal action's verb and the board's title (the match id) went
    into rich as markup (a MarkupError traceback, or a hidden link); two equal legal
    actions ended `play` with StopIteration."""
    from rich.console import Console

    from battleline_client import tui

    view = types_pb2.MatchView(match_id=MARKUP)
    view.legal_actions.extend(["[/bold] R7@3", "play R7@3", "play R7@3", "play R7@4"])
    console = Console(record=True, width=200, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(tui.screen(view))
    console.print(tui.choices(view))
    shown = console.export_text()
    assert MARKUP in shown and "[/bold] " in shown
    question, answers = tui.choice_step(["play R7@3", "play R7@3", "play R7@4"])
    assert answers == {"3": ["play R7@3"], "4": ["play R7@4"]}, (question, answers)


def test_a_flood_of_actions_or_a_long_proof_is_drawn_cut() -> None:
    """Thirteenth audit: 3 MB of legal actions, of a proof or of an event took `play` and
    `watch` 2-31 s to draw. At most a thousand actions (a position has under 800) and 600
    characters of any one string are drawn; what the player types still reads them all."""
    from rich.console import Console

    from battleline_client import tui

    view = types_pb2.MatchView(match_id="m1")
    view.legal_actions.extend(f"play R{i}@3" for i in range(100_000))
    view.claimable_flags.add(number=1, proof="R8 R9 R10 " * 100_000)
    event = types_pb2.MatchEvent(number=1, text="play R7@3 " * 100_000)
    console = Console(record=True, width=200, file=open(os.devnull, "w"))  # noqa: SIM115
    for drawing in (tui.screen(view), tui.choices(view), tui.actions(view),
                    tui.event_line(event, view)):
        console.print(drawing)
    shown = console.export_text()
    assert len(shown) < 200_000, len(shown)
    assert "1000. play R999@3" in shown and "play R1000@3" not in shown
    assert "R8 R9 R10 R8" in shown and "…" in shown
    assert tui.parse_choice("5000", view.legal_actions) == ["play R4999@3"]


def test_odd_actions_numbers_and_seats_from_a_server_end_nothing_with_a_traceback() -> None:
    """Fourteenth audit: a guile verb alone among the legal actions (IndexError in `play`),
    a NaN or infinite estimate in a review (ValueError, OverflowError in `review`), an event
    of an unknown seat before any view (KeyError in `watch`); two actions that differ in
    spacing alone, or in no word that tells them apart, made `play` ask forever; and the
    decks, players, their hand counts, clocks and Scout's returns were drawn uncut (a
    3.9 MB view: 9 s a screen)."""
    from rich.console import Console

    from battleline.v1 import review_pb2
    from battleline_client import tui
    from battleline_client.commands import review

    view = types_pb2.MatchView(match_id="m1")
    view.legal_actions.extend(["deserter", "traitor ", "redeploy", "mud-discard", "play R1@1"])
    view.decks.add(deck="troop", count=1)
    view.decks.extend([view.decks[0]] * 100_000)
    player = view.players.add(seat=types_pb2.SEAT_FIRST)
    player.hand_counts.extend([types_pb2.DeckCount(deck="troop", count=1)] * 100_000)
    view.players.extend([player] * 50)
    view.scout_returned.extend(["R1"] * 100_000)
    moves = review_pb2.GameReview()
    for value in (math.nan, math.inf, -math.inf, 1e308):
        moves.moves.add(number=1, estimate_before=value, estimate_after=value, loss=value)
    console = Console(record=True, width=200, file=open(os.devnull, "w"))  # noqa: SIM115
    for drawing in (tui.choices(view), tui.screen(view), review.render(moves),
                    tui.event_line(types_pb2.MatchEvent(number=1, seat=5, text="x"))):
        console.print(drawing)
    shown = console.export_text()
    assert len(shown) < 50_000, len(shown)
    for pair in (["play R1@1", "play R1@1 "], ["play R1@1", "play R1@1 x"]):
        question, answers = tui.choice_step(pair)
        assert all(len(chosen) == 1 for chosen in answers.values()), (question, answers)


@pytest.mark.parametrize("status", ["status: ", "status: won", "status: won 0 1"])
def test_a_position_whose_status_line_is_cut_is_drawn_without_a_traceback(status: str) -> None:
    """Thirty-first audit: a hostile server's position with `status: won` and no seat (or
    no word at all) ended `watch` and `play` in an IndexError of the position parser."""
    from rich.console import Console

    from battleline_client import tui
    from battleline_rules import dump_position, new_game

    position = dump_position(new_game("standard", seed=2)).replace("status: playing", status)
    view = types_pb2.MatchView(match_id="m1", position=position)
    view.legal_actions.append("play R1@1")
    console = Console(record=True, width=200, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(tui.screen(view))  # raised IndexError
    assert "match m1" in console.export_text()
