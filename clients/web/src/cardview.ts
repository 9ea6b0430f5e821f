// One card as an element: a plain face, or a button when it can be picked.

import { face } from "./cards";
import { h } from "./dom";

export function cardFace(card: string, ruleset: string, extra = ""): HTMLElement {
  const f = face(card, ruleset);
  return h("span", { class: `card ${f.cls} ${extra}`.trim(), role: "img", "aria-label": f.label, title: f.title },
    h("span", { class: "value", "aria-hidden": "true" }, f.value),
    f.mark !== "" && h("span", { class: "mark", "aria-hidden": "true" }, f.mark));
}

export function cardButton(
  card: string, ruleset: string, label: string, pressed: boolean, onclick: () => void, key: string,
): HTMLButtonElement {
  const f = face(card, ruleset);
  return h("button", {
    type: "button", class: `card ${f.cls} pickable${pressed ? " chosen" : ""}`,
    "aria-label": label, "aria-pressed": pressed ? "true" : "false", title: f.title,
    "data-key": key, onclick,
  },
  h("span", { class: "value", "aria-hidden": "true" }, f.value),
  f.mark !== "" && h("span", { class: "mark", "aria-hidden": "true" }, f.mark));
}
