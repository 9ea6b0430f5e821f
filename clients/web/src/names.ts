// What each seat is called on the page. "You" is decided by seat, never by a name: the
// viewer's own seat is labelled "You" here, and a player's chosen name that reads as "you"
// (any case, accents, spacing, look-alike letters) gets its role after it, so an opponent
// named "You" is shown as "You (opponent)" and cannot be taken for the viewer.

import { type MatchView, Seat } from "./gen/battleline/v1/types_pb";

/** The label of the viewer's own seat. */
export const YOU = "You";

// Letters from other scripts drawn like y, o and u (before lower-casing: Υ is Y, υ is u).
const LOOKALIKES: Record<string, string> = {
  "У": "y", "у": "y", "Υ": "y", "Ү": "y", "ү": "y", "γ": "y",
  "О": "o", "о": "o", "Ο": "o", "ο": "o", "Օ": "o", "օ": "o", "ᴏ": "o", "0": "o",
  "υ": "u", "ս": "u", "Ս": "u", "ᴜ": "u",
};

// Letters drawn as nothing (the Hangul fillers, the blank Braille pattern, the combining
// grapheme joiner, Khmer's inherent vowels): "You" and a filler reads as "You". The engine
// refuses names holding one; a page may still meet one from an older engine.
const BLANK_LETTERS = /[\u115F\u1160\u3164\uFFA0\u2800\u034F\u17B4\u17B5]/gu;

/** Whether a chosen name could be read as the page's own "You": its letters, lookalikes
 * mapped, are "you", or they are as few and not plain ASCII (no table of lookalikes is
 * complete: Lisu, Cherokee and small-capital letters draw "you" too). The terminal client
 * has the same rule (tui.could_pass_for_you). */
export function readsAsYou(name: string): boolean {
  const letters = name.normalize("NFKD").replace(BLANK_LETTERS, "").replace(/[^\p{L}\p{N}]/gu, "");
  const mapped = [...letters].map((c) => LOOKALIKES[c] ?? c).join("").toLowerCase();
  return mapped === "you" || ([...letters].length <= 4 && !/^[\x00-\x7f]*$/.test(letters));
}

/** Each seat's label for this view: "You" for the viewer's seat, else the player's name. */
export function seatNames(view: MatchView): Map<Seat, string> {
  const names = new Map<Seat, string>();
  for (const p of view.players) {
    const seatName = p.seat === Seat.FIRST ? "First seat" : "Second seat";
    if (p.seat === view.viewer) {
      names.set(p.seat, YOU);
      continue;
    }
    const name = !p.occupied ? "Open seat" : p.displayName !== "" ? p.displayName : seatName;
    const role = view.viewer === Seat.UNSPECIFIED ? seatName.toLowerCase() : "opponent";
    names.set(p.seat, readsAsYou(name) ? `${name} (${role})` : name);
  }
  return names;
}

/** Whether the viewer holds a seat of this match (false for a spectator). */
export function isPlayer(view: MatchView): boolean {
  return view.viewer !== Seat.UNSPECIFIED;
}
