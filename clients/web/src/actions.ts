// The seat's legal actions (view.legal_actions, in the rules-core notation) read into
// choices the page can offer. The server decides what is legal; this only reads its list.

import { cardLabel } from "./cards";

export type Choice =
  | { kind: "play"; text: string; card: string; flag: number | null }
  | { kind: "redeploy"; text: string; target: string; flag: number; to: number | null }
  | { kind: "deserter"; text: string; target: string; flag: number }
  | { kind: "traitor"; text: string; target: string; flag: number; to: number }
  | { kind: "claim"; text: string; flag: number }
  | { kind: "draw" | "scout-draw"; text: string; deck: string }
  | { kind: "scout-return"; text: string; card: string }
  | { kind: "mud-discard"; text: string; card: string; flag: number }
  | { kind: "pass" | "end" | "other"; text: string };

/** The guile tactics: the hand card that makes a redeploy/deserter/traitor action. */
export const GUILE: Record<string, "redeploy" | "deserter" | "traitor"> = {
  REDEPLOY: "redeploy", DESERTER: "deserter", TRAITOR: "traitor",
};

function at(word: string): { card: string; flag: number } {
  const [card = "", flag = ""] = word.split("@");
  return { card, flag: Number(flag) };
}

export function parseAction(text: string): Choice {
  const [verb = "", a = "", b = ""] = text.split(" ");
  switch (verb) {
    case "play":
      return a.includes("@") ? { kind: "play", text, ...at(a) } : { kind: "play", text, card: a, flag: null };
    case "redeploy": {
      const t = at(a);
      return { kind: "redeploy", text, target: t.card, flag: t.flag, to: b === "discard" ? null : Number(b) };
    }
    case "deserter": {
      const t = at(a);
      return { kind: "deserter", text, target: t.card, flag: t.flag };
    }
    case "traitor": {
      const t = at(a);
      return { kind: "traitor", text, target: t.card, flag: t.flag, to: Number(b) };
    }
    case "claim":
      return { kind: "claim", text, flag: Number(a) };
    case "draw":
    case "scout-draw":
      return { kind: verb, text, deck: a };
    case "scout-return":
      return { kind: "scout-return", text, card: a };
    case "mud-discard":
      return { kind: "mud-discard", text, ...at(a) };
    case "pass":
    case "end":
      return { kind: verb, text };
    default:
      return { kind: "other", text };
  }
}

/** The hand card a choice uses, if any. */
export function handCard(choice: Choice): string | null {
  switch (choice.kind) {
    case "play":
    case "scout-return":
      return choice.card;
    case "redeploy":
      return "REDEPLOY";
    case "deserter":
      return "DESERTER";
    case "traitor":
      return "TRAITOR";
    default:
      return null;
  }
}

/** The action in words, for buttons, labels and the event log. */
export function describe(text: string, ruleset: string): string {
  const c = parseAction(text);
  const name = (card: string): string => cardLabel(card, ruleset);
  switch (c.kind) {
    case "play":
      return c.flag === null ? `play ${name(c.card)}` : `play ${name(c.card)} at flag ${c.flag}`;
    case "redeploy":
      return `Redeploy: move ${name(c.target)} from flag ${c.flag} ${c.to === null ? "to the discards" : `to flag ${c.to}`}`;
    case "deserter":
      return `Deserter: discard ${name(c.target)} at flag ${c.flag}`;
    case "traitor":
      return `Traitor: take ${name(c.target)} from flag ${c.flag} to flag ${c.to}`;
    case "claim":
      return `claim flag ${c.flag}`;
    case "draw":
    case "scout-draw": {
      const [deck = "", card] = text.split(" ").slice(1);
      const drawn = card !== undefined && !card.startsWith("?") ? `: ${name(card)}` : "";
      return `${c.kind === "draw" ? "draw" : "Scout: draw"} from the ${deck} deck${drawn}`;
    }
    case "scout-return":
      return `Scout: put ${name(c.card)} back on its deck`;
    case "mud-discard":
      return `Mud: discard ${name(c.card)} at flag ${c.flag}`;
    case "pass":
      return "pass";
    case "end":
      return "end the turn";
    case "other":
      return text;
  }
}
