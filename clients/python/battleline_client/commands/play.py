"""`battleline play`: play a match in the terminal, against the hosted AI, a friend, or
yourself (two seats on one terminal), on a given engine or a local one started here."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from battleline.v1 import types_pb2

from .. import tui
from ..client import Client, Seat
from ..common import DEFAULT_TARGET, SeatHandle, is_finished, is_my_turn
from ..errors import BattleLineError, NotFound, PermissionDenied, Unauthenticated
from ..port_owner import listening_uids, may_take_token, strangers
from ..printable import plain
from ..saved_seats import SavedSeat, SavedSeats, default_directory
from ..typed_line import read_line
from . import options

if TYPE_CHECKING:
    from ..hosting import ServeChild

# The levels the web page offers, and its default (clients/web/src/lobby.ts).
AI_LEVELS = range(1, 6)
DEFAULT_AI_LEVEL = 1
# A hosted AI takes its seat within a second or two (a few more while a just-started
# worker loads): past this, no worker serves the engine, and waiting longer is no use.
AI_WAIT_S = 20.0
# The invite code by environment: a command line (`--join CODE`) is readable by every
# local user, who could join with it first (twenty-seventh audit).
INVITE_ENV = "BATTLELINE_INVITE"

HELP = """\
[bold]How to move[/]: type a card then a flag: [bold]R7 3[/] (or [bold]R7[/], then the flag when
  asked; [bold]TRAITOR[/], [bold]DESERTER[/], [bold]REDEPLOY[/] ask for the card to take, then the
  flag), or the action itself, or the number of an action from [bold]list[/].
[bold]Cards[/]: troops are a colour letter and a value, [bold]R7[/] = red 7 (colours R O Y G B P,
  values 1-10; deck52: suits S H D C, ranks 2-10 J Q K, as [bold]HQ[/]); tactics by name:
  ALEXANDER DARIUS (leaders), CAVALRY SHIELD (morale), FOG MUD (on a flag),
  SCOUT REDEPLOY DESERTER TRAITOR (guile). Flags are numbered 1-9 from the left.
[bold]Actions[/]:
  play R7@3            put R7 on your side of flag 3 (play FOG@5 likewise; play SCOUT)
  claim 4              claim flag 4 (offered only when it can be proven: the proof is shown)
  draw troop           draw from the troop deck and end your turn (draw tactic likewise;
                       troop or tactic alone, as the "you can" line shows them)
  end                  end the turn without drawing (a hand of seven, as after Scout, or
                       both decks empty)
  pass                 play no card (only when you cannot place a troop card)
  redeploy R7@3 5      move your R7 from flag 3 to flag 5 ("discard" instead of 5)
  deserter B4@2        discard the opponent's B4 from flag 2
  traitor B4@2 6       take the opponent's B4 from flag 2 onto your side of flag 6
  scout-draw troop / scout-return R3 / mud-discard R4@6   Scout's and Mud's steps
Several at once, separated by commas: [bold]play R7@3, draw troop[/] (or [bold]R7 3, troop[/]).
[bold]list[/] shows the legal actions again; [bold]hint[/] asks the hosted AI what it would play
(where the engine runs its AI service; not between two people; from your hint budget);
[bold]resign[/] gives up the match (asks first); Ctrl-C (or Ctrl-D) leaves the table and
gives it up at once. A game left otherwise (the terminal closed, the connection lost) goes
on, its clock running (out of time loses): [bold]battleline play --resume[/] takes it up.
The rules: docs/RULES.md."""
HINT = "type 'list' for the legal actions, '?' for help"
LEAVING = "to leave: [bold]resign[/] gives the match up (asks first), Ctrl-C or Ctrl-D at once"


class Terminal:
    """The terminal: prints each event once and asks the player for moves."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.playing: Seat | None = None  # the seat played here (a hot seat's first)
        self.kept = False  # its seat is kept for --resume
        self.shown = 0  # number of the last event printed
        self.recent: deque[types_pb2.MatchEvent] = deque(maxlen=tui.RECENT * 3)

    def prompt(self, text: str) -> str:
        """Show `text` (markup) and read the line typed after it; Ctrl-C interrupts
        the wait whenever it is pressed (see `typed_line`)."""
        self.console.print(text, end="")
        return read_line()

    def events(self, events: Iterator[types_pb2.MatchEvent] | list[types_pb2.MatchEvent],
               view: types_pb2.MatchView | None) -> None:
        for event in events:
            if event.number > self.shown:
                self.console.print(tui.event_line(event, view))
                self.shown = event.number
                self.recent.append(event)

    def pass_to(self, who: str, wipe: bool = True) -> None:
        """Hand a hot seat's terminal over: what the last seat saw (its hand, its draws) is
        wiped, scrollback too, and the next seat's screen waits for it to be there (the
        other seat's draws and hand stood above the next screen)."""
        if wipe:
            self.console.clear()
            if self.console.is_terminal:
                self.console.file.write("\x1b[3J")  # the scrollback as well
        self.prompt(f"[bold]{escape(who)}[/]: your turn; press Enter when the "
                    "other seat is not looking ")
        self.console.clear()

    def recall(self, events: list[types_pb2.MatchEvent]) -> None:
        """Tell the next screens these moves (a hot seat's: its own account of them)."""
        self.recent = deque(events, maxlen=self.recent.maxlen)

    def screen(self, view: types_pb2.MatchView, title: str = "") -> None:
        self.console.print(tui.screen(view, title, recent=list(self.recent)))

    def ask(self, seat: Seat, view: types_pb2.MatchView, who: str,
            listed: bool = True) -> list[str] | None:
        """The player's choice; None to resign. What can be done is shown first unless
        ``listed`` is False (after a refusal: the error stays in sight)."""
        if listed:
            self.console.print(tui.choices(view))
        while True:
            text = self.prompt(
                f"[bold]{escape(who)}[/], your move (1-{len(view.legal_actions)} from 'list', "
                "a card then a flag, notation; ? for help): ").strip()
            if text.lower() == "resign":
                if self.prompt("resign the match? \\[y/N] ").strip().lower() in ("y", "yes"):
                    return None
                continue
            if text.lower() in ("?", "help"):
                self.console.print(HELP)
                continue
            if text.lower() in ("quit", "exit", "q"):
                self.console.print(LEAVING)
                continue
            if text.lower() == "hint":
                self.console.print(hint_line(seat))
                continue
            if text.lower() in ("list", "l"):
                self.console.print(tui.actions(view))
                continue
            plays = tui.card_moves(text, view.legal_actions)
            asked = text.upper()
            while len(plays) > 1:  # a card with several uses: which card it takes, which flag
                question, answers = tui.choice_step(plays)
                answer = self.prompt(escape(
                    f"{asked} {question} ({' '.join(answers)}; Enter: back) ")).strip().upper()
                if not answer:
                    plays = []
                elif answer in answers:
                    plays = answers[answer]
                    asked += f" {answer}"
                else:  # asked again: a slip of the finger does not throw the move away
                    self.console.print(f"[red]no such choice[/]: {escape(answer)}")
            if plays:
                return plays
            if tui.card_moves(text, view.legal_actions):
                continue  # Enter at a question: back to the move prompt
            unplayable = tui.not_playable(text, view)
            if unplayable is not None:
                self.console.print(f"[red]{escape(unplayable)}[/] ({HINT})")
                continue
            choice = tui.parse_choice(text, view.legal_actions)
            if choice:
                return choice
            if text:
                self.console.print(f"[red]no action {escape(repr(text))}[/] ({HINT})")

    def turn(self, seat: Seat, view: types_pb2.MatchView, who: str) -> types_pb2.MatchView:
        """Ask until the engine accepts a move; returns the seat's view after it."""
        listed = True
        while True:
            choice = self.ask(seat, view, who, listed)
            if choice is None:
                return seat.resign()
            try:
                response = seat.act(*choice)
            except BattleLineError as err:
                self.console.print(f"[red]refused {_why(err)}[/] ({HINT})")
                view = seat.view()
                if not is_my_turn(view):
                    return view
                listed = False
                continue
            self.events(list(response.events), response.view)
            return response.view

    def final(self, view: types_pb2.MatchView) -> None:
        self.screen(view)
        hands = tui.revealed_hands(view)
        if hands is not None:
            self.console.print(hands)
        self.console.print(f"[bold]{escape(tui.result(view))}[/]")


def hint_line(seat: Seat) -> str:
    """The hosted AI's suggestion for the seat's move, or why there is none (a match
    between two people, no AI service, the hint budget spent), as one line of markup."""
    try:
        suggestion = seat.hint().suggestion
    except BattleLineError as err:
        return f"[yellow]no hint {_why(err)}[/]"
    estimate = (f" (its win estimate after it: {100 * suggestion.win_estimate:.0f}%)"
                if suggestion.iterations else "")
    return f"the AI suggests [bold]{escape(suggestion.action)}[/]{estimate}"


def _why(err: BattleLineError) -> str:
    """A refusal as the move prompt tells it: `(reason): message`, as text, not markup."""
    return f"({escape(err.reason or err.code.name)}): {escape(err.message)}"


def play_hot_seat(term: Terminal, client: Client, ruleset: str, auto_claim: bool,
                  seed: int | None) -> types_pb2.MatchView:
    """Both seats on this terminal, taking turns."""
    created = client.create(opponent="local", ruleset=ruleset, auto_claim=auto_claim,
                            clock="none", seed=seed)
    if created.other is None:
        raise _unexpected("made a local match without its second seat")
    seats = [client.seat(created.seat), client.seat(created.other)]
    term.playing = seats[0]
    views = [seat.view() for seat in seats]
    term.console.print(f"local match {escape(created.match_id)}: two seats on this terminal")
    last: int | None = None
    while not is_finished(views[0]):
        i = next((i for i, v in enumerate(views) if is_my_turn(v)), None)
        if i is None:  # neither can act on what we hold: refresh both
            views = [seat.view() for seat in seats]
            if not is_finished(views[0]) and not any(is_my_turn(v) for v in views):
                raise _unexpected("says neither seat may move in a match going on")
            continue
        who = f"{tui.SEAT_NAMES.get(seats[i].handle.seat, '?')} seat"
        if i != last:
            term.pass_to(who, wipe=last is not None)
            last = i
        term.recall(_own_account(seats[i], views[i]))
        term.screen(views[i], title=f"{who} to move (hot seat)")
        views[i] = term.turn(seats[i], views[i], who)
        if not is_my_turn(views[i]):
            views[1 - i] = seats[1 - i].view()
    return client.view(created.match_id)  # as a spectator: the result names both seats


def invite_code(given: str) -> str:
    """The code of an invite: as given, or out of the web page's link (`…#join=CODE` or
    `…?join=CODE`), which a player was handed and `--join` refused as not found."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(given.strip())
    for query in (parts.fragment, parts.query):
        codes = parse_qs(query).get("join")
        if codes:
            return codes[0]
    return given.strip()


def _own_account(seat: Seat, view: types_pb2.MatchView) -> list[types_pb2.MatchEvent]:
    """The last moves as this seat was told them. A hot seat's screen showed the moves as
    the other seat had been told them: the tactic it drew, the cards its Scout put back."""
    first = max(0, view.last_event_number - (tui.RECENT * 3))
    if first >= view.last_event_number:
        return []
    events: list[types_pb2.MatchEvent] = []
    with contextlib.closing(seat.watch(resume_after=first)) as stream:
        for message in stream:
            if not message.HasField("event"):
                break  # a snapshot: the moves before it are no longer kept
            events.append(message.event)
            if (message.event.number >= view.last_event_number
                    or len(events) >= view.last_event_number - first):
                break  # as many as were asked for, whatever a server sends
    return events


def _wait_for_opponent(term: Terminal, seat: Seat, wait_s: float) -> types_pb2.MatchView:
    view = seat.view()
    names = [p.display_name for p in view.players if not p.occupied]
    ai = bool(names) and names[0].startswith("AI level")
    if ai:
        wait_s = min(wait_s, AI_WAIT_S)
    deadline = time.monotonic() + wait_s
    waiting = f"waiting for {names[0]} to take its seat" if ai else (
        "waiting for the other seat to be taken")
    with term.console.status(Text(f"{waiting} (up to {wait_s:g} s)...")):
        while view.phase == types_pb2.MATCH_PHASE_WAITING:
            if time.monotonic() > deadline:
                raise typer.Exit(_gave_up(term, seat, wait_s, ai))
            time.sleep(0.5)
            view = seat.view()
    return view


def _gave_up(term: Terminal, seat: Seat, wait_s: float, ai: bool) -> int:
    why = ("no hosted-AI worker is serving this engine (`battleline serve` starts one "
           "unless given --no-ai)" if ai else "nobody joined")
    term.console.print(f"[red]nobody took the other seat within {wait_s:g} s[/]: {why}; "
                       "cancelling the match.")
    with contextlib.suppress(BattleLineError):  # taken meanwhile: "joined", left to play
        seat.cancel()
    return 2


def games_going_on(client: Client, kept: SavedSeats) -> list[tuple[SavedSeat, Seat]]:
    """The kept seats whose match goes on, the latest first. Those over (or unknown to
    the engine now) are forgotten; one the engine cannot tell about now is kept, not
    offered; one whose token would go to another user's process is not even asked
    about (`port_owner`)."""
    going = []
    for saved in kept.left():
        if not may_take_token(kept.target, saved.engine_uid):  # checked before each ask
            continue
        seat = client.seat(saved.handle)
        try:  # sent once: a resend after UNAVAILABLE could reach whoever bound it since
            over = is_finished(seat.remember(client.view(saved.match_id, saved.token,
                                                         resend=False)))
        except (NotFound, PermissionDenied, Unauthenticated):  # expired, or the data is gone
            over = True
        except BattleLineError:
            continue  # cannot tell now: kept, and not offered
        if over:
            _forget(kept, saved.match_id)
        else:
            going.append((saved, seat))
    return going


def _left_here(saved: SavedSeat) -> str:
    since = time.strftime("%d %b %H:%M", time.localtime(saved.saved_at))
    return f"{saved.against}, since {since}, match {saved.match_id}"


def _strangers_told(term: Terminal, kept: SavedSeats, listening: set[int] | None) -> None:
    """Say so when another user's process listens where the kept seats' engine did
    (`listening`: `port_owner.listening_uids` of it): their tokens are not sent to it (it
    could read the player's hands and move for them)."""
    others = set().union(*(strangers(listening or set(), s.engine_uid) for s in kept.left()))
    if others:
        users = ", ".join(str(uid) for uid in sorted(others))
        term.console.print(f"[yellow]{escape(kept.target)} is served by a process of "
                           f"another user (uid {users}), not one your kept seats there were "
                           "given by: they are not sent to it[/]")


def _resumed(term: Terminal, client: Client, kept: SavedSeats) -> Seat:
    """The seat of the latest game left on this engine, told to the player."""
    listening = listening_uids(kept.target)
    _strangers_told(term, kept, listening)
    if listening == set() and kept.left():
        term.console.print(f"no engine the check can trust listens on {escape(kept.target)} "
                           "now: your games there are kept; start it (--target as HOST:PORT) "
                           "and run battleline play --resume again")
        raise typer.Exit(1)
    going = games_going_on(client, kept)
    if not going:
        term.console.print(f"no game left unfinished on {escape(kept.target)}: start one with "
                           "battleline play")
        raise typer.Exit(1)
    saved, seat = going[0]
    term.console.print(f"taking up your game against {escape(_left_here(saved))}")
    return seat


def _mention_left(term: Terminal, client: Client, kept: SavedSeats | None) -> None:
    """Before a new game: the games left unfinished on this engine, and the way back."""
    if kept is None:
        return
    _strangers_told(term, kept, listening_uids(kept.target))
    for saved, _seat in games_going_on(client, kept):
        term.console.print(f"[yellow]a game you left goes on[/] (against "
                           f"{escape(_left_here(saved))}, its clock running): "
                           "battleline play --resume takes it up")


def play_remote(term: Terminal, seat: Seat, wait_s: float) -> types_pb2.MatchView:
    """One seat here, the other somewhere else: opponent's moves arrive on the Watch stream."""
    term.playing = seat
    view = _wait_for_opponent(term, seat, wait_s)
    term.recall(_own_account(seat, view))  # the opponent may have moved first: told too
    term.shown = view.last_event_number
    with contextlib.closing(seat.watch(include_views=True,
                                       resume_after=view.last_event_number)) as stream:
        while not is_finished(view):
            if is_my_turn(view):
                term.screen(view)
                view = term.turn(seat, view, "you")
                continue
            waited = tui.seat_label(view, view.current_seat)
            term.console.print(f"[dim]waiting for {escape(waited)}...[/]")
            for message in stream:
                if message.HasField("event"):
                    # Told with the view that follows it when the message carries one.
                    term.events([message.event],
                                message.view if message.HasField("view") else view)
                if message.HasField("view"):
                    # The newest view known: a streamed view can be older than our last
                    # answer.
                    view = seat.last_view or message.view
                    if is_my_turn(view) or is_finished(view):
                        break
            else:  # the stream is over: the engine ends it with the match, and only then
                view = seat.view()
                if not (is_finished(view) or is_my_turn(view)):
                    raise _unexpected("ended the match's stream while the match goes on")
    return view


def _unexpected(what: str) -> BattleLineError:
    """An answer no engine gives (a broken or hostile server): the game stops with a
    word, never a traceback or a loop asking again without end (twenty-eighth audit)."""
    return BattleLineError(f"the engine {what}", reason="unexpected-answer")


def play(
    ctx: typer.Context,
    target: Annotated[str | None, typer.Option(
        callback=options.check_target, envvar=options.TARGET_ENV,
        help=f"Engine host:port; without it, the `battleline serve` on {DEFAULT_TARGET} if one "
        "runs, else a local engine with a hosted AI is started for this game.")] = None,
    ai: Annotated[int | None, typer.Option(
        "--ai", help=f"Play the hosted AI at this level, {AI_LEVELS[0]} (weakest) to "
        f"{AI_LEVELS[-1]} (strongest); level {DEFAULT_AI_LEVEL} if not given.",
    )] = None,
    friend: Annotated[bool, typer.Option(
        "--friend", help="Create a private match and print its invite code.")] = False,
    join: Annotated[str | None, typer.Option(
        "--join", envvar=INVITE_ENV,
        help="Join a friend's match by its invite code, or the web page's invite link (it "
             f"ends in #join=CODE); better by {INVITE_ENV} (a command line is readable by "
             "every local user, who could take the seat first).")] = None,
    local: Annotated[bool, typer.Option(
        "--local", help="Both seats on this terminal (hot seat).")] = False,
    ruleset: Annotated[str, typer.Option(help="standard, basic or deck52.")] = "standard",
    name: Annotated[str, typer.Option(help="Your display name.")] = "",
    auto_claim: Annotated[bool, typer.Option(help="Claim provable flags automatically.")] = False,
    seed: Annotated[int | None, typer.Option(
        help="Deal seed (--local only: a server refuses one where the other seat is not "
        "yours).")] = None,
    wait: Annotated[float, typer.Option(min=0, help="Seconds to wait for the other seat.")] = 300.0,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Take up the latest game on this engine that was left without "
        "resigning (the terminal closed, the connection lost): its seat is kept on this "
        "machine until the match ends.")] = False,
    state_dir: Annotated[Path | None, typer.Option(
        envvar="BATTLELINE_STATE_DIR", help="Where the seats of games going on are kept "
        "(default $XDG_STATE_HOME/battleline, else ~/.local/state/battleline).")] = None,
) -> None:
    """Play Battle Line in the terminal: numbered legal actions, claim proofs, live moves."""
    console = Console(highlight=False)
    # Typer vendors its own click, whose ParameterSource is not click's: read by name.
    source = ctx.get_parameter_source("join")
    if join is not None and source is not None and source.name == "ENVIRONMENT":
        if ai is not None or friend or local or resume:
            join = None  # a mode asked for on the command line wins over the environment
        else:
            console.print(f"joining the match of the invite code in {INVITE_ENV}")
    if sum([ai is not None, friend, join is not None, local, resume]) > 1:
        raise typer.BadParameter("choose one of --ai, --friend, --join, --local and --resume")
    if ai is not None and ai not in AI_LEVELS:
        raise typer.BadParameter(
            f"the hosted AI has levels {AI_LEVELS[0]} to {AI_LEVELS[-1]}, not {ai}",
            param_hint="--ai")
    if seed is not None and not local:
        raise typer.BadParameter("a seed goes with --local only: whoever knows it knows the "
                                 "other seat's hand", param_hint="--seed")
    if name and (local or resume):
        raise typer.BadParameter("a name is for a new seat against someone else: --local "
                                 "seats are named by their seats, a resumed one keeps its "
                                 "name", param_hint="--name")
    service = None
    if target is None and resume:
        target = DEFAULT_TARGET  # a game is taken up where it was left, never elsewhere
    if target is None:
        target, service = _engine(console, local)
    # The seats of games on an engine that outlives this command (one started here
    # stops with it, and its games with it), kept until their match ends.
    kept = (SavedSeats(state_dir or default_directory(os.environ), target)
            if service is None and not local else None)
    term = Terminal(console)
    try:
        with options.client(target) as client, _resigned_on_leaving(term, service is None, kept):
            if resume:
                assert kept is not None
                seat = _resumed(term, client, kept)
                term.kept = True
                final = play_remote(term, seat, wait)
            elif local:
                final = play_hot_seat(term, client, ruleset, auto_claim, seed)
            elif join is not None:
                _mention_left(term, client, kept)
                handle = client.join(invite_code=invite_code(join), name=name,
                                     auto_claim=auto_claim)
                _keep(term, kept, handle, "a friend")
                final = play_remote(term, client.seat(handle), wait)
            else:
                _mention_left(term, client, kept)
                kind = "open" if friend else "ai"
                level = ai or DEFAULT_AI_LEVEL
                created = client.create(opponent=kind, private=friend, ai_level=level,
                                        ruleset=ruleset, name=name, auto_claim=auto_claim,
                                        seat="random")
                _keep(term, kept, created.seat, "a friend" if friend else f"AI level {level}")
                if friend:  # the server's text: never markup, never shell syntax
                    _tell_invite(console, created.invite_code, target)
                final = play_remote(term, client.seat(created.seat), wait)
            term.final(final)
    except BattleLineError as err:
        console.print(f"[red]{escape(options.failure(err, target))}[/]")
        if term.kept and term.playing is not None and not _over(term.playing):
            console.print("the game goes on without you, its clock running (out of time "
                          "loses): battleline play --resume takes it up again")
        if err.reason == "no-hosted-ai":
            console.print(f"the engine at {target} runs no hosted AI: play without --target "
                          "(a local engine with one is started), or start the engine with "
                          "`battleline serve`")
        raise typer.Exit(1) from None
    except (KeyboardInterrupt, EOFError):  # before a match was made
        raise typer.Exit(130) from None
    finally:
        if service is not None:
            service.stop()


# An invite code a shell line carries as it is (the engine's are ten letters and digits).
PLAIN_CODE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _tell_invite(console: Console, code: str, target: str) -> None:
    """The invite code, and the command the friend pastes to join. The code is the
    server's text: a hostile `$(...)` ran in the friend's shell, and even quoted, rich's
    wrapping broke the line where it chose (twenty-eighth audit). So the line is only
    for a plain code, the target quoted, never wrapped (a terminal copies a soft-wrapped
    line whole), without emoji codes. Any other code is shown in hex, cut, on one line:
    printed whole and wrapped, its text drew a line of its own that looked like ours, and
    quoted, pasted, it still ran (the re-tests)."""
    if PLAIN_CODE.fullmatch(code):
        console.print(f"invite code: [bold]{code}[/]")
        console.print(f"your friend runs: {INVITE_ENV}={code} battleline play --target "
                      f"{escape(shlex.quote(target))}", soft_wrap=True, emoji=False)
    else:  # no quote marks, no shell syntax: pasted whole, the line runs nothing either
        console.print(f"[yellow]the engine sent an invite code of other characters than "
                      f"letters and digits (not one an engine of ours makes; in hex: "
                      f"{code[:32].encode().hex()}): no command to join is shown[/]",
                      soft_wrap=True, emoji=False)


def _keep(term: Terminal, kept: SavedSeats | None, handle: SeatHandle, against: str) -> None:
    """Keep the seat for --resume (`term.kept`); a place that cannot take it (a full disk,
    a directory others may write to) costs only the way back, said once, never the game."""
    if kept is None:
        return
    owners = listening_uids(kept.target) or set()  # the engine that just issued the token
    try:
        kept.keep(handle, against, owners.pop() if len(owners) == 1 else None)
        term.kept = True
    except OSError as err:
        term.console.print(f"[yellow]this seat is not kept for --resume[/] "
                           f"({escape(plain(str(err)))}): the game goes on")


def _forget(kept: SavedSeats, match_id: str) -> None:
    with contextlib.suppress(OSError):  # kept, at worst: offered, then found over
        kept.forget(match_id)


def _over(seat: Seat) -> bool:
    return seat.last_view is not None and is_finished(seat.last_view)


@contextlib.contextmanager
def _resigned_on_leaving(term: Terminal, remote: bool,
                         kept: SavedSeats | None) -> Iterator[None]:
    """Ctrl-C (or the end of input) leaves the table and resigns the match: the player
    chose to leave, and a match left running held one of the player's four places
    against the hosted AI (a player who left a few was refused new ones) and kept a
    friend waiting out its clock. A seat whose match is over is no longer kept."""
    try:
        yield
    except (KeyboardInterrupt, EOFError):
        seat, gave_up = term.playing, ""
        if seat is not None and remote and not _over(seat):
            with contextlib.suppress(BattleLineError):
                ended = seat.resign()  # a match still waiting for its other seat: cancelled
                gave_up = ("cancelled the match" if ended.end_reason ==
                           types_pb2.END_REASON_CANCELLED else "resigned the match")
        if not remote:
            gave_up = "the engine started for this game stops, and the match with it"
        term.console.print("\nleft the table" + (f": {gave_up}" if gave_up else ""))
        raise typer.Exit(130) from None
    finally:
        if kept is not None and term.playing is not None and _over(term.playing):
            _forget(kept, term.playing.handle.match_id)


def _engine(console: Console, local: bool) -> tuple[str, ServeChild | None]:
    """The engine to play on when no --target is given, and what to stop afterwards:
    the running `battleline serve` (nothing to stop), else one started here (a hot-seat
    game needs no AI, so none is started for it)."""
    from ..hosting import ServeChild, is_serving

    if is_serving(DEFAULT_TARGET):
        console.print(f"playing on the engine at {DEFAULT_TARGET} (battleline serve)")
        return DEFAULT_TARGET, None
    service = ServeChild("--no-ai") if local else ServeChild()
    what = "a local engine" if local else "a local engine with its hosted AI"
    try:
        with console.status(f"no engine on {DEFAULT_TARGET}: starting {what}..."):
            target = service.start()
    except RuntimeError as err:
        console.print(f"[red]{escape(plain(str(err)))}[/]")
        raise typer.Exit(1) from None
    console.print(f"{what} on {target}, for this game only")
    return target, service
