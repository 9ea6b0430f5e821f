// The end: a result naming the winner, and the finished game with every card revealed
// (both hands and the decks from the record's final position, and every move; the board
// above it shows the final flags).

import { cardFace } from "./cardview";
import { h } from "./dom";
import type { GetRecordResponse } from "./gen/battleline/v1/record_pb";
import { EndReason, type MatchView, Seat } from "./gen/battleline/v1/types_pb";
import { renderLog } from "./log";
import { isPlayer } from "./names";

const REASONS: Partial<Record<EndReason, string>> = {
  [EndReason.BREAKTHROUGH]: "breakthrough (three adjacent flags)",
  [EndReason.ENVELOPMENT]: "envelopment (five flags)",
  [EndReason.FLANKS]: "the flanks",
  [EndReason.RESIGNATION]: "resignation",
  [EndReason.TIMEOUT]: "time out",
  [EndReason.DRAW]: "a draw",
  [EndReason.STALEMATE]: "stalemate (provable flags awarded)",
  [EndReason.CANCELLED]: "cancellation before the first game",
};

/** The result, decided by seat: the winner seat against the view's own (`viewer`), never
 * by comparing names (an opponent may call itself "You"; names.ts labels it apart). */
export function renderResult(view: MatchView, names: Map<Seat, string>, newGame: () => void): HTMLElement {
  const reason = REASONS[view.endReason] ?? "the end of the match";
  const winner = view.winner === Seat.UNSPECIFIED ? null : names.get(view.winner) ?? "?";
  const outcome = view.endReason === EndReason.CANCELLED ? "cancelled"
    : winner === null ? "draw" : !isPlayer(view) ? "other" : view.winner === view.viewer ? "win" : "loss";
  const headline = {
    cancelled: "Match cancelled", draw: "No winner: a draw", win: "You win!",
    loss: `You lost: ${winner} wins`, other: `${winner} wins`,
  }[outcome];
  const detail = outcome === "cancelled" ? "It ended before its first game: nobody took the other seat."
    : `Winner: ${winner ?? "nobody"}, by ${reason}.`;
  return h("section", { class: "result", "data-testid": "result", "data-outcome": outcome, "aria-live": "polite" },
    h("h2", {}, headline),
    h("p", {}, detail),
    h("button", { type: "button", class: "primary", "data-testid": "new-game", onclick: newGame }, "New game"));
}

/** "hand 0: R1 B3" lines of a position text, by their key. */
function positionLines(position: string): Map<string, string[]> {
  const lines = new Map<string, string[]>();
  for (const line of position.split("\n")) {
    const [key = "", rest = ""] = line.split(": ");
    lines.set(key, rest === "-" ? [] : rest.split(" ").filter((w) => w !== ""));
  }
  return lines;
}

export function renderReview(view: MatchView, record: GetRecordResponse, names: Map<Seat, string>): HTMLElement {
  const ruleset = view.options?.ruleset ?? "standard";
  const lines = positionLines(record.position);
  const row = (title: string, cards: string[], testid: string): HTMLElement =>
    h("div", { class: "review-row", "data-testid": testid }, h("h3", {}, title),
      h("div", { class: "card-row" }, ...(cards.length > 0 ? cards.map((c) => cardFace(c, ruleset, "small")) : ["none"])));
  const seats: [Seat, string][] = [[Seat.FIRST, "0"], [Seat.SECOND, "1"]];
  return h("section", { class: "review", "data-testid": "review", "aria-label": "Review of the game" },
    h("h2", {}, "The finished game, every card revealed"),
    ...seats.map(([seat, n]) => row(`${names.get(seat) ?? "?"}: hand at the end`, lines.get(`hand ${n}`) ?? [], `review-hand-${n}`)),
    row("Troop deck, bottom to top", lines.get("deck troop") ?? [], "review-deck-troop"),
    lines.has("deck tactic") && row("Tactics deck, bottom to top", lines.get("deck tactic") ?? [], "review-deck-tactic"),
    renderLog(record.events, names, ruleset, "Every move", "review-moves"));
}
