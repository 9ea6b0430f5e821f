// How a card looks and reads: colour class, the letter printed on it, and its spoken name.
// Colours follow the Python TUI's suit names; every card also carries its letter, so
// nothing depends on telling colours apart. Tactics are printed with their full name and
// say what they do on hover.

const TROOP_COLOURS: Record<string, string> = {
  R: "Red", O: "Orange", Y: "Yellow", G: "Green", B: "Blue", P: "Purple",
};
const DECK52_SUITS: Record<string, string> = {
  S: "Spades", H: "Hearts", D: "Diamonds", C: "Clubs",
};
const DECK52_RANKS: Record<string, string> = { J: "Jack", Q: "Queen", K: "King" };

const TACTICS: Record<string, { printed: string; name: string; does: string }> = {
  ALEXANDER: { printed: "Alexander", name: "Alexander, Leader", does: "any colour, any value; one Leader a side" },
  DARIUS: { printed: "Darius", name: "Darius, Leader", does: "any colour, any value; one Leader a side" },
  CAVALRY: { printed: "Companion Cavalry", name: "Companion Cavalry", does: "an 8 of any colour" },
  SHIELD: { printed: "Shield Bearers", name: "Shield Bearers", does: "a 1, 2 or 3 of any colour" },
  FOG: { printed: "Fog", name: "Fog", does: "at its flag only the sum counts" },
  MUD: { printed: "Mud", name: "Mud", does: "four cards a side at its flag" },
  SCOUT: { printed: "Scout", name: "Scout", does: "draw three cards, then put two back" },
  REDEPLOY: { printed: "Redeploy", name: "Redeploy", does: "move one of your cards to another flag or the discards" },
  DESERTER: { printed: "Deserter", name: "Deserter", does: "discard one of the opponent's cards" },
  TRAITOR: { printed: "Traitor", name: "Traitor", does: "take one of the opponent's troops onto your side" },
};

/** The ruleset's colour (or suit) letters with their names, for the legend. */
export function letters(ruleset: string): [string, string][] {
  return Object.entries(ruleset === "deck52" ? DECK52_SUITS : TROOP_COLOURS);
}

export interface CardFace {
  /** CSS class choosing the colour. */
  cls: string;
  /** Big text on the card (value, rank, or a tactic's full name). */
  value: string;
  /** Letter printed in the corner (colour or suit letter; none for tactics, named in full). */
  mark: string;
  /** What a screen reader says. */
  label: string;
  /** The hover text: the name, and for a tactic what it does. */
  title: string;
}

export function face(card: string, ruleset: string): CardFace {
  if (card.startsWith("?")) {
    const deck = card.slice(1);
    const label = `a hidden ${deck} card`;
    return { cls: "hidden", value: "?", mark: "", label, title: label };
  }
  const letter = card.slice(0, 1);
  const rest = card.slice(1);
  if (ruleset === "deck52" && letter in DECK52_SUITS) {
    const label = `${DECK52_RANKS[rest] ?? rest} of ${DECK52_SUITS[letter]}`;
    return { cls: `suit-${letter}`, value: rest, mark: letter, label, title: label };
  }
  if (letter in TROOP_COLOURS && /^\d+$/.test(rest)) {
    const label = `${TROOP_COLOURS[letter]} ${rest}`;
    return { cls: `troop-${letter}`, value: rest, mark: letter, label, title: label };
  }
  const tactic = TACTICS[card];
  if (tactic === undefined) return { cls: "tactic", value: card, mark: "", label: card, title: card };
  return {
    cls: "tactic", value: tactic.printed, mark: "", label: tactic.name, title: `${tactic.name}: ${tactic.does}`,
  };
}

export function cardLabel(card: string, ruleset: string): string {
  return face(card, ruleset).label;
}

/** Whether a hand card is a tactic (its name, not a troop's colour and value). */
export function isTactic(card: string): boolean {
  return card in TACTICS;
}
