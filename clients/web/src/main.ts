// Start-up: resume this tab's match, join one from an invitation link, or show the lobby.

import { Code } from "@connectrpc/connect";
import { errorCode, errorText, game as games, LOST, lobby, newSeatSecret, resentIfLost } from "./api";
import { render } from "./app";
import { tickClocks } from "./clocks";
import { Game } from "./game";
import { MatchPhase, OpponentKind, SeatChoice } from "./gen/battleline/v1/types_pb";
import { joinCode, type LobbyActions } from "./lobby";
import { forgetGame, keepGame, keptGames, loadSession, type Session, saveSession } from "./session";
import { NOTHING } from "./selection";
import { Store } from "./state";
import "./style.css";

const root = document.getElementById("app") as HTMLElement;
const store = new Store();
const game = new Game(store);

/** Play `session` in this tab, kept for any tab of this browser until it ends. */
function start(session: Session, against: string): void {
  keepGame(session, against);
  saveSession(session);
  game.open(session);
}

async function attempt(work: () => Promise<void>): Promise<void> {
  store.update({ busy: true, error: "" });
  try {
    await work();
  } catch (err) {
    store.update({ error: errorText(err) });
  } finally {
    store.update({ busy: false });
  }
}

/** A standard match against `opponent`, the seat drawn at random, under a secret of our
 * own so that it is sent again after a lost answer (not after the creator's cap). */
function createMatch(opponent: { kind: OpponentKind; aiLevel?: number; private?: boolean },
  name: string) {
  const request = {
    options: { ruleset: "standard" }, seat: SeatChoice.RANDOM, seatSecret: newSeatSecret(),
    opponent, seatOptions: { displayName: name },
  };
  return resentIfLost(() => lobby.createMatch(request), LOST);
}

const lobbyActions: LobbyActions = {
  playAi: (level, name) => void attempt(async () => {
    const created = await createMatch({ kind: OpponentKind.AI, aiLevel: level }, name);
    start({ matchId: created.matchId, token: created.seatToken, inviteCode: "" }, `AI level ${level}`);
  }),
  invite: (name) => void attempt(async () => {
    const created = await createMatch({ kind: OpponentKind.OPEN, private: true }, name);
    start({ matchId: created.matchId, token: created.seatToken, inviteCode: created.inviteCode },
      "a friend");
  }),
  resume: ({ matchId, token, inviteCode }) => {
    const session = { matchId, token, inviteCode };
    saveSession(session);
    game.open(session);
  },
};

/** Whether this tab holds a seat in a match not yet over (loaded, or still loading). */
function inPlay(): boolean {
  const { view } = store.state;
  return loadSession() !== null && (view === null || view.phase !== MatchPhase.FINISHED);
}

async function join(code: string): Promise<void> {
  history.replaceState(null, "", location.pathname);
  // A link only changes the hash: another site holding this window could swap the match
  // in play for one of its own, and the seat left behind would lose on its clock.
  if (inPlay() && !window.confirm("Leave the match you are playing to join the one this link invites you to?")) {
    return;
  }
  await attempt(async () => {
    const request = { target: { case: "inviteCode" as const, value: code }, seatSecret: newSeatSecret() };
    const joined = await resentIfLost(() => lobby.joinMatch(request));
    start({ matchId: joined.matchId, token: joined.seatToken, inviteCode: "" }, "a friend");
  });
}

/** What a kept game's seat answered if its match is gone: expired, or its token unknown. */
const GONE = new Set([Code.NotFound, Code.Unauthenticated, Code.PermissionDenied]);

/** Forget the kept games that ended while no tab of this browser had them open, so the
 * lobby offers only games that can be taken up. */
async function dropEndedGames(): Promise<void> {
  for (const kept of keptGames()) {
    try {
      const { view } = await games.getView(
        { matchId: kept.matchId }, { headers: { authorization: `Bearer ${kept.token}` } });
      if (view?.phase === MatchPhase.FINISHED) forgetGame(kept.matchId);
    } catch (err) {
      if (GONE.has(errorCode(err))) forgetGame(kept.matchId);
    }
  }
}

store.subscribe((state) => render(root, state, game, lobbyActions));
// Escape drops a picked card (or its picked target).
document.addEventListener("keydown", (event) => {
  const { selection } = store.state;
  if (event.key !== "Escape" || selection.card === null) return;
  game.select(selection.target !== null ? { ...selection, target: null } : NOTHING);
});
tickClocks(() => store.state);

// An invitation link pasted into a tab that is already open changes only the hash.
window.addEventListener("hashchange", () => {
  const code = joinCode();
  if (code !== null) void join(code);
});

const code = joinCode();
const session = loadSession();
if (code !== null) void join(code);
else if (session !== null) game.open(session);
else {
  render(root, store.state, game, lobbyActions);
  void dropEndedGames().then(() => store.update({}));
}
