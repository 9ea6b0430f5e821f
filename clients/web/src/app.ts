// The page from the state: the lobby, or the match (opponent, board, you, hand, actions,
// log) and at the end the result and the review. Redrawn whole on every change, keeping
// the keyboard focus on the same control.

import { renderAnalysis } from "./analysis";
import { renderBoard, sides } from "./board";
import { renderControls, statusLine } from "./controls";
import { h } from "./dom";
import type { Game } from "./game";
import { EventKind, MatchPhase, Seat } from "./gen/battleline/v1/types_pb";
import { renderHand } from "./hand";
import { type LobbyActions, renderInvite, renderLobby } from "./lobby";
import { eventLine, renderLog } from "./log";
import { renderPlayer } from "./players";
import { renderResult, renderReview } from "./review";
import { options, NOTHING } from "./selection";
import { keptGames } from "./session";
import type { State } from "./state";

let dragging: string | null = null;

/** The opponent's plays since the viewer's last action, in words, for the status line. */
function lastMove(state: State, names: Map<Seat, string>, ruleset: string): string {
  const viewer = state.view?.viewer;
  const events = [...state.events.values()];
  let mine = -1;
  events.forEach((e, i) => { if (e.seat === viewer) mine = i; });
  return events.slice(mine + 1)
    .filter((e) => e.kind === EventKind.ACTION && e.seat !== viewer && /^(play|redeploy|deserter|traitor|claim)\b/.test(e.text))
    .map((e) => eventLine(e, names, ruleset)).join("; ");
}

function renderGame(state: State, game: Game): HTMLElement {
  const view = state.view;
  if (view === null) return h("main", { class: "game" }, h("p", { class: "status" }, "Loading the match…"));
  const ruleset = view.options?.ruleset ?? "standard";
  const { me, them, names } = sides(view);
  const mine = view.legalActions.length > 0 && !state.busy;
  const opts = mine ? options(view.legalActions, state.selection) : null;
  const proofs = new Map(view.claimableFlags.map((c) => [c.number, c.proof]));
  const act = (action: string): void => void game.submit([action]);
  const board = renderBoard(view, opts, state.selection, proofs, {
    act,
    target: (key) => game.select({ ...state.selection, target: state.selection.target === key ? null : key }),
    canDrop: (flag) => dragging !== null && view.legalActions.includes(`play ${dragging}@${flag}`),
    drop: (flag) => {
      if (dragging !== null && view.legalActions.includes(`play ${dragging}@${flag}`)) act(`play ${dragging}@${flag}`);
      dragging = null;
    },
  });
  const over = view.phase === MatchPhase.FINISHED;
  return h("main", { class: `game${mine ? " my-turn" : ""}${over ? " over" : ""}`, "data-testid": "game" },
    h("p", {
      class: "status", "data-testid": "status", "data-my-turn": mine ? "yes" : "no",
      "data-phase": MatchPhase[view.phase].toLowerCase(),
    }, statusLine(view, names, state.busy, lastMove(state, names, ruleset))),
    state.error !== "" && h("p", { class: "error", role: "alert", "data-testid": "error" }, state.error),
    view.phase === MatchPhase.WAITING && state.inviteCode !== "" && renderInvite(state.inviteCode),
    over && renderResult(view, names, () => game.leave()),
    h("div", { class: "table" },
      renderPlayer(view, them, names.get(them) ?? "Opponent", state.viewAt),
      board,
      renderPlayer(view, me, names.get(me) ?? "You", state.viewAt)),
    over && state.record !== null && renderReview(view, state.record, names),
    over && renderAnalysis(state.matchId, names),
    !over && view.hand.length > 0 && renderHand(view, ruleset, opts, state.selection, {
      pick: (card) => game.select(card === null ? NOTHING : { card, target: null }),
      drag: (card) => { dragging = card; },
    }),
    !over && renderControls(view, opts, state.selection, state.hint, {
      act, hint: state.hintsOff ? null : () => void game.hint(),
    }),
    view.phase === MatchPhase.PLAYING && h("div", { class: "buttons" },
      h("button", {
        type: "button", class: "quiet", "data-testid": "resign", "data-key": "resign",
        onclick: () => { if (confirm("Resign this match?")) void game.resign(); },
      }, "Resign")),
    view.phase === MatchPhase.WAITING && h("div", { class: "buttons" },
      h("button", { type: "button", class: "quiet", "data-testid": "leave", onclick: () => void game.cancel() },
        "Cancel the match")),
    !(over && state.record !== null) && renderLog(state.events.values(), names, ruleset, "Moves", "log", true));
}

export function render(root: HTMLElement, state: State, game: Game, lobby: LobbyActions): void {
  const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.key : undefined;
  const hadFocus = root.contains(document.activeElement);
  const logScroll = root.querySelector(".log .events")?.scrollTop ?? 0;

  const page = state.screen === "lobby"
    ? [state.error !== "" && h("p", { class: "error", role: "alert", "data-testid": "error" }, state.error),
      renderLobby(lobby, state.busy, keptGames())]
    : [renderGame(state, game)];
  root.replaceChildren(h("header", { class: "top" }, h("h1", {}, "Battle Line")), ...page.filter((x) => x !== false));

  // The page is redrawn whole, so screen readers hear the status from a region that stays.
  const said = root.querySelector("[data-testid='status']")?.textContent ?? "";
  const announce = document.getElementById("announce");
  if (announce !== null && said !== "" && announce.textContent !== said) announce.textContent = said;

  const log = root.querySelector(".log .events");
  if (log !== null) log.scrollTop = logScroll;  // newest first: a reader scrolled down stays there
  if (!hadFocus || focused === undefined) return;
  const again = root.querySelector<HTMLElement>(`[data-key="${CSS.escape(focused)}"]`);
  // The control is gone (a card played): go on from the first thing there is to do.
  (again ?? root.querySelector<HTMLElement>(".pickable, .flag-token.target, .claim, .deck:enabled, .action"))?.focus();
}
