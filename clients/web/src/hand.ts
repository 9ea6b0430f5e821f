// The viewer's hand: each card a button (Enter or Space picks it), draggable to a flag.

import { cardLabel } from "./cards";
import { cardButton, cardFace } from "./cardview";
import { h } from "./dom";
import type { Options, Selection } from "./selection";

export interface HandActions {
  pick(card: string | null): void;
  drag(card: string | null): void;
}

export function renderHand(
  hand: readonly string[], ruleset: string, opts: Options | null, sel: Selection, actions: HandActions,
): HTMLElement {
  const list = h("ol", { class: "hand-cards" });
  for (const card of hand) {
    const usable = opts?.usableCards.has(card) ?? false;
    if (!usable) {
      list.append(h("li", {}, cardFace(card, ruleset, "idle")));
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
    h("h2", {}, "Your hand"), list);
}
