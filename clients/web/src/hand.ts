// The viewer's hand: each card a button (Enter or Space picks it), draggable to a flag.

import { cardLabel, isTactic } from "./cards";
import { cardButton, cardFace } from "./cardview";
import { h } from "./dom";
import { type MatchView, TurnStep } from "./gen/battleline/v1/types_pb";
import type { Options, Selection } from "./selection";

const LEADERS = ["ALEXANDER", "DARIUS"];

/** Why a tactic in hand cannot be played on this turn ("" when it can, or when the turn
 * is not at its play step): a greyed card with no word was taken for a bug. */
export function idleReason(view: MatchView, card: string, usable: boolean): string {
  if (usable || !isTactic(card) || view.turnStep !== TurnStep.PLAY || view.legalActions.length === 0) {
    return "";
  }
  const played = (seat: number): number => view.players.find((p) => p.seat === seat)?.tacticsPlayed ?? 0;
  const mine = played(view.viewer);
  const theirs = view.players.filter((p) => p.seat !== view.viewer).reduce((n, p) => n + p.tacticsPlayed, 0);
  if (mine > theirs) return `You have played ${mine} tactics and your opponent ${theirs}: wait until they play one.`;
  if (LEADERS.includes(card)) return "One Leader each: you have played yours.";
  return "Nothing it could be played on now.";
}

export interface HandActions {
  pick(card: string | null): void;
  drag(card: string | null): void;
}

export function renderHand(
  view: MatchView, ruleset: string, opts: Options | null, sel: Selection, actions: HandActions,
): HTMLElement {
  const list = h("ol", { class: "hand-cards" });
  const notes: HTMLElement[] = [];
  for (const card of view.hand) {
    const usable = opts?.usableCards.has(card) ?? false;
    if (!usable) {
      const why = idleReason(view, card, usable);
      const idle = cardFace(card, ruleset, "idle");
      if (why !== "") {
        idle.title = `${idle.title} (not now: ${why})`;
        notes.push(h("li", {}, `${cardLabel(card, ruleset)}: ${why}`));
      }
      list.append(h("li", {}, idle));
      continue;
    }
    const chosen = sel.card === card;
    const label = `${cardLabel(card, ruleset)}${chosen ? ", selected" : ""}`;
    const button = cardButton(card, ruleset, label, chosen, () => actions.pick(chosen ? null : card), `hand-${card}`);
    button.dataset.testid = "hand-card";
    button.draggable = true;
    button.addEventListener("dragstart", (event) => {
      event.dataTransfer?.setData("text/plain", card);
      actions.drag(card);
    });
    button.addEventListener("dragend", () => actions.drag(null));
    list.append(h("li", {}, button));
  }
  return h("section", { class: "hand", "aria-label": "Your hand", "data-testid": "hand" },
    h("h2", {}, "Your hand"), list,
    notes.length > 0 && h("ul", { class: "not-now muted", "data-testid": "not-now" }, ...notes));
}
