// What the viewer can do besides picking cards and flags: whose turn it is, the decks
// to draw from, claims with their proofs, and plain action buttons (pass, end, Scout...).

import { describe } from "./actions";
import { cardFace } from "./cardview";
import { h } from "./dom";
import { type MatchView, MatchPhase, TurnStep } from "./gen/battleline/v1/types_pb";
import { type Options, prompt, type Selection } from "./selection";
import type { Hint } from "./state";

const STEPS: Partial<Record<TurnStep, string>> = {
  [TurnStep.PLAY]: "play a card",
  [TurnStep.FINISH]: "claim flags, then end the turn by drawing a card",
  [TurnStep.SCOUT_DRAW]: "Scout: draw a card",
  [TurnStep.SCOUT_RETURN]: "Scout: put a card from your hand back on its deck",
  [TurnStep.MUD_DISCARD]: "Mud: discard one of your cards at that flag",
};

/** Whose turn it is and what to do, after the opponent's last move (`lastMove`, in words). */
export function statusLine(view: MatchView, names: Map<number, string>, busy: boolean, lastMove: string): string {
  if (view.phase === MatchPhase.WAITING) return "Waiting for the other player to join…";
  if (view.phase === MatchPhase.FINISHED) return "The match is over.";
  if (busy) return "Sending…";
  const step = STEPS[view.turnStep] ?? "act";
  if (view.legalActions.length > 0) return `${lastMove !== "" ? `${lastMove}. ` : ""}Your turn: ${step}.`;
  return `${names.get(view.currentSeat) ?? "The opponent"} to ${step}…`;
}

export interface ControlActions {
  act(action: string): void;
  /** Ask for a hint; null when the match gives none. */
  hint: (() => void) | null;
}

export function renderControls(
  view: MatchView, opts: Options | null, sel: Selection, hint: Hint | null, actions: ControlActions,
): HTMLElement {
  const act = actions.act;
  const ruleset = view.options?.ruleset ?? "standard";
  const decks = h("div", { class: "decks", role: "group", "aria-label": "Decks" });
  for (const d of view.decks) {
    const action = opts?.decks.get(d.deck);
    const what = `${d.deck === "troop" ? "Troop" : "Tactics"} deck`;
    decks.append(h("button", {
      type: "button", class: `deck deck-${d.deck}`, disabled: action === undefined,
      "data-testid": `deck-${d.deck}`, "data-key": `deck-${d.deck}`,
      "aria-label": `${action !== undefined ? "Draw from the " : ""}${what}, ${d.count} cards`,
      title: action !== undefined ? `Draw from the ${what.toLowerCase()}` : view.turnStep === TurnStep.PLAY
        ? "Play a card first; then draw to end your turn" : `${what}: not drawable now`,
      onclick: () => action !== undefined && act(action),
    }, h("span", { class: "deck-name" }, what), h("span", { class: "deck-count" }, String(d.count))));
  }
  const buttons = (opts?.buttons ?? []).map((c) => h("button", {
    type: "button", class: "action", "data-testid": "action-button", "data-key": `action-${c.text}`,
    onclick: () => act(c.text),
  }, capital(describe(c.text, ruleset))));
  const claims = view.claimableFlags.map((c) => h("li", { id: `proof-${c.number}` },
    h("strong", {}, `Flag ${c.number}: `), c.proof));
  const next = opts === null ? "" : prompt(sel, opts);
  const ask = actions.hint;
  const chance = hint?.estimate == null ? "" : ` (its chance to win then: ${Math.round(hint.estimate * 100)}%)`;
  const advice = hint !== null && hint.version === view.version
    ? `The AI would ${describe(hint.action, ruleset)}${chance}.` : "";
  return h("section", { class: "controls", "aria-label": "Actions" },
    next !== "" && h("p", { class: "hint", "data-testid": "hint" }, next),
    advice !== "" && h("p", { class: "advice", "data-testid": "advice" }, advice),
    decks,
    (buttons.length > 0 || (opts !== null && ask !== null)) && h("div", { class: "buttons" }, ...buttons,
      opts !== null && ask !== null && advice === "" && h("button", {
        type: "button", class: "quiet", "data-testid": "ask-hint", "data-key": "ask-hint", onclick: ask,
      }, "Hint")),
    claims.length > 0 && h("div", { class: "proofs", "data-testid": "proofs" },
      h("h2", {}, "You can claim"), h("ul", {}, ...claims)),
    view.scoutReturned.length > 0 && h("p", { class: "discards", "data-testid": "scout-returned" },
      h("span", { class: "muted" }, "Put back with Scout, top first: "),
      ...view.scoutReturned.map((card) => cardFace(card, ruleset, "small"))));
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
