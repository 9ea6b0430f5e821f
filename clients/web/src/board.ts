// The battlefield: nine flags in a row, the opponent's cards above, the viewer's below,
// Fog and Mud at their flag, claimed flags moved toward the side that won them, and the
// legend. On a narrow screen the flags stack (style.css): the opponent left, the viewer right.

import { cardLabel } from "./cards";
import { cardButton, cardFace } from "./cardview";
import { h } from "./dom";
import { type Flag, Seat, type MatchView } from "./gen/battleline/v1/types_pb";
import { renderLegend } from "./legend";
import { isPlayer, seatNames, YOU } from "./names";
import type { Options, Selection } from "./selection";

export interface BoardActions {
  /** Submit an action. */
  act(action: string): void;
  /** Pick a board card as the target of Redeploy or Traitor. */
  target(key: string): void;
  /** Whether the hand card being dragged can be played at this flag. */
  canDrop(flag: number): boolean;
  /** Play the dragged hand card at this flag. */
  drop(flag: number): void;
}

export interface Sides {
  me: Seat;
  them: Seat;
  names: Map<Seat, string>;
}

/** The viewer's seat at the bottom; a spectator sees the first seat there. The names are
 * by seat (names.ts): the viewer's own seat is "You", whatever the players call themselves. */
export function sides(view: MatchView): Sides {
  const me = view.viewer === Seat.UNSPECIFIED ? Seat.FIRST : view.viewer;
  const them = me === Seat.FIRST ? Seat.SECOND : Seat.FIRST;
  return { me, them, names: seatNames(view) };
}

function cardsOf(flag: Flag, seat: Seat): string[] {
  return seat === Seat.FIRST ? flag.firstCards : flag.secondCards;
}

export function renderBoard(
  view: MatchView, opts: Options | null, sel: Selection, proofs: Map<number, string>,
  actions: BoardActions,
): HTMLElement {
  const { me, them, names } = sides(view);
  const ruleset = view.options?.ruleset ?? "standard";

  const side = (flag: Flag, seat: Seat): HTMLElement => {
    const list = h("ol", {
      class: `side ${seat === me ? "mine" : "theirs"}`,
      "aria-label": `${names.get(seat) ?? ""} at flag ${flag.number}`,
    });
    for (const card of cardsOf(flag, seat)) {
      const key = `${card}@${flag.number}`;
      const action = opts?.boardCards.get(key);
      if (action === undefined) {
        list.append(h("li", {}, cardFace(card, ruleset, sel.target === key ? "chosen" : "")));
        continue;
      }
      const label = `${cardLabel(card, ruleset)} at flag ${flag.number}, pick`;
      const pick = (): void => (action === "" ? actions.target(key) : actions.act(action));
      list.append(h("li", {}, cardButton(card, ruleset, label, sel.target === key, pick, `board-${key}`)));
    }
    return list;
  };

  const marker = (flag: Flag): HTMLElement => {
    const owner = flag.claimedBy;
    const play = opts?.flags.get(flag.number);
    const claim = opts?.claims.get(flag.number);
    const words = [`Flag ${flag.number}`];
    if (owner !== Seat.UNSPECIFIED) words.push(`won by ${owner === view.viewer ? "you" : names.get(owner) ?? ""}`);
    if (claim !== undefined) words.push("claimable");
    for (const env of flag.environment) words.push(cardLabel(env, ruleset));
    if (play !== undefined) words.push(sel.target === null ? "play here" : "move here");
    const label = words.join(", ");
    const where = owner === Seat.UNSPECIFIED ? "open" : owner === me ? "won-mine" : "won-theirs";
    const tokenClass = `flag-token ${where}${play !== undefined ? " target" : ""}`;
    const body = [
      h("span", { class: "flag-number", "aria-hidden": "true" }, String(flag.number)),
      ...flag.environment.map((env) => cardFace(env, ruleset, "environment")),
    ];
    const token = play !== undefined
      ? h("button", {
        type: "button", class: tokenClass, "aria-label": label, title: label,
        "data-testid": `flag-${flag.number}`, "data-key": `flag-${flag.number}`,
        onclick: () => actions.act(play),
      }, ...body)
      : h("div", { class: tokenClass, role: "img", "aria-label": label, title: label, "data-testid": `flag-${flag.number}` }, ...body);
    const proof = proofs.get(flag.number);
    return h("div", { class: `flag-slot ${where}` }, token,
      claim !== undefined && h("button", {
        type: "button", class: "claim", "data-testid": `claim-${flag.number}`, "data-key": `claim-${flag.number}`,
        "aria-label": `Claim flag ${flag.number}`, title: proof ?? "", "aria-describedby": `proof-${flag.number}`,
        onclick: () => actions.act(claim),
      }, "Claim"));
  };

  const column = (flag: Flag): HTMLElement => {
    const play = opts?.flags.get(flag.number);
    const col = h("li", {
      class: `flag-col${play !== undefined ? " droppable" : ""}`, "data-flag": flag.number,
    }, side(flag, them), marker(flag), side(flag, me));
    col.addEventListener("dragover", (event) => {
      if (actions.canDrop(flag.number)) event.preventDefault();
    });
    col.addEventListener("drop", (event) => {
      event.preventDefault();
      actions.drop(flag.number);
    });
    return col;
  };

  const theirName = names.get(them) ?? "Opponent";
  const myName = names.get(me) ?? (isPlayer(view) ? YOU : "First seat");
  return h("section", { class: "board", "aria-label": "Battlefield", "data-testid": "board" },
    h("div", { class: "sides-head", "aria-hidden": "true" },
      h("span", {}, theirName), h("span", {}, "Flag"), h("span", {}, myName)),
    h("ol", { class: "flags" }, ...view.flags.map(column)),
    renderLegend(ruleset, theirName, isPlayer(view) ? "you" : myName));
}
