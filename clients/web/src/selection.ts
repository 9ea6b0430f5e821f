// What the player has picked so far (a hand card, then maybe a card on the board) and
// what that leaves to click: flags, board cards and buttons, each bound to one legal
// action text. Pure functions of the legal actions and the selection.

import { type Choice, GUILE, handCard, parseAction } from "./actions";

export interface Selection {
  /** A card in the hand. */
  card: string | null;
  /** For Redeploy and Traitor: the board card picked to move, "CARD@FLAG". */
  target: string | null;
}

export const NOTHING: Selection = { card: null, target: null };

export interface Options {
  /** Hand cards that have something to do. */
  usableCards: Set<string>;
  /** Flag number -> the action a click on that flag submits. */
  flags: Map<number, string>;
  /** "CARD@FLAG" on the board -> the action it submits, or "" when it selects a target. */
  boardCards: Map<string, string>;
  /** Claimable flag number -> "claim N". */
  claims: Map<number, string>;
  /** Deck name -> draw or scout-draw action. */
  decks: Map<string, string>;
  /** Actions offered as plain buttons (pass, end, Scout, Redeploy to the discards...). */
  buttons: Choice[];
}

export function options(legal: readonly string[], sel: Selection): Options {
  const choices = legal.map(parseAction);
  const out: Options = {
    usableCards: new Set(), flags: new Map(), boardCards: new Map(),
    claims: new Map(), decks: new Map(), buttons: [],
  };
  for (const c of choices) {
    const card = handCard(c);
    if (card !== null) out.usableCards.add(card);
    switch (c.kind) {
      case "claim":
        out.claims.set(c.flag, c.text);
        break;
      case "draw":
      case "scout-draw":
        out.decks.set(c.deck, c.text);
        break;
      case "mud-discard":
        out.boardCards.set(`${c.card}@${c.flag}`, c.text);
        break;
      case "pass":
      case "end":
      case "other":
        out.buttons.push(c);
        break;
      default:
        if (card === sel.card) selected(c, sel, out);
    }
  }
  return out;
}

/** What the selected hand card (and target) offers. */
function selected(c: Choice, sel: Selection, out: Options): void {
  switch (c.kind) {
    case "play":
      if (c.flag === null) out.buttons.push(c);
      else out.flags.set(c.flag, c.text);
      return;
    case "scout-return":
      out.buttons.push(c);
      return;
    case "deserter":
      out.boardCards.set(`${c.target}@${c.flag}`, c.text);
      return;
    case "redeploy":
    case "traitor": {
      const key = `${c.target}@${c.flag}`;
      if (sel.target === null) out.boardCards.set(key, "");
      else if (sel.target === key) {
        if (c.to === null) out.buttons.push(c);
        else out.flags.set(c.to, c.text);
      }
      return;
    }
    default:
      return;
  }
}

/** What a selected card asks the player to do next, in words. */
export function prompt(sel: Selection, opts: Options): string {
  if (sel.card === null) return "";
  const guile = GUILE[sel.card];
  if (guile === "deserter") return "Pick the opponent's card to discard.";
  if (guile !== undefined) {
    return sel.target === null
      ? `Pick the card to ${guile === "redeploy" ? "redeploy" : "take"}.`
      : "Pick the flag to move it to.";
  }
  return opts.flags.size > 0 ? "Pick a flag to play it at." : "Choose below what to do with it.";
}
