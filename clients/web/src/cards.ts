// How a card looks and reads: colour class, the letter printed on it, and its spoken name.
// Colours follow the Python TUI's suit names; every card also carries its letter, so
// nothing depends on telling colours apart.

const TROOP_COLOURS: Record<string, string> = {
  R: "Red", O: "Orange", Y: "Yellow", G: "Green", B: "Blue", P: "Purple",
};
const DECK52_SUITS: Record<string, string> = {
  S: "Spades", H: "Hearts", D: "Diamonds", C: "Clubs",
};
const DECK52_RANKS: Record<string, string> = { J: "Jack", Q: "Queen", K: "King" };
const TACTICS: Record<string, { short: string; name: string }> = {
  ALEXANDER: { short: "Alex", name: "Alexander, Leader" },
  DARIUS: { short: "Darius", name: "Darius, Leader" },
  CAVALRY: { short: "Cav 8", name: "Companion Cavalry" },
  SHIELD: { short: "Shield", name: "Shield Bearers" },
  FOG: { short: "Fog", name: "Fog" },
  MUD: { short: "Mud", name: "Mud" },
  SCOUT: { short: "Scout", name: "Scout" },
  REDEPLOY: { short: "Redep.", name: "Redeploy" },
  DESERTER: { short: "Desert.", name: "Deserter" },
  TRAITOR: { short: "Traitor", name: "Traitor" },
};

export interface CardFace {
  /** CSS class choosing the colour. */
  cls: string;
  /** Big text on the card (value, rank or short tactic name). */
  value: string;
  /** Letter printed in the corner (colour or suit letter; none for tactics, named in full). */
  mark: string;
  /** What a screen reader says. */
  label: string;
}

export function face(card: string, ruleset: string): CardFace {
  if (card.startsWith("?")) {
    const deck = card.slice(1);
    return { cls: "hidden", value: "?", mark: "", label: `a hidden ${deck} card` };
  }
  const letter = card.slice(0, 1);
  const rest = card.slice(1);
  if (ruleset === "deck52" && letter in DECK52_SUITS) {
    return {
      cls: `suit-${letter}`, value: rest, mark: letter,
      label: `${DECK52_RANKS[rest] ?? rest} of ${DECK52_SUITS[letter]}`,
    };
  }
  if (letter in TROOP_COLOURS && /^\d+$/.test(rest)) {
    return { cls: `troop-${letter}`, value: rest, mark: letter, label: `${TROOP_COLOURS[letter]} ${rest}` };
  }
  const tactic = TACTICS[card];
  return { cls: "tactic", value: tactic?.short ?? card, mark: "", label: tactic?.name ?? card };
}

export function cardLabel(card: string, ruleset: string): string {
  return face(card, ruleset).label;
}
