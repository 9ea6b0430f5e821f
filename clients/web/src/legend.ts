// What the board's marks mean: the claimed-flag tokens (an arrow toward the side that won
// the flag) and the card colours with their letters.

import { letters } from "./cards";
import { h } from "./dom";

function token(where: string, number: string): HTMLElement {
  return h("span", { class: `flag-token mini ${where}`, "aria-hidden": "true" },
    h("span", { class: "flag-number" }, number));
}

/** `theirName` and `myName` as they follow "won by": the board's caller passes "you" for
 * the viewer's own seat (decided by seat, never by comparing a player's name). */
export function renderLegend(ruleset: string, theirName: string, myName: string): HTMLElement {
  const colours = letters(ruleset).map(([letter, name]) => {
    const cls = ruleset === "deck52" ? `suit-${letter}` : `troop-${letter}`;
    return h("li", { class: "legend-item" },
      h("span", { class: `swatch ${cls}`, "aria-hidden": "true" }, letter), ` ${name}`);
  });
  return h("div", { class: "legend", "data-testid": "legend" },
    h("ul", { class: "legend-flags", "aria-label": "Flags", "data-testid": "legend-flags" },
      h("li", { class: "legend-item" }, token("open", "1"), " open"),
      h("li", { class: "legend-item" }, token("won-mine", "2"), ` won by ${myName}`),
      h("li", { class: "legend-item" }, token("won-theirs", "3"), ` won by ${theirName}`)),
    h("ul", {
      class: "legend-colours", "aria-label": ruleset === "deck52" ? "Suits" : "Colours",
      "data-testid": "legend-colours",
    }, ...colours));
}
