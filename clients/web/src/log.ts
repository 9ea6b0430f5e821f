// The event log: every move in words, naming who made it. The live log puts the newest
// first, so the move that matters is at the top and never scrolled half out of sight.

import { describe } from "./actions";
import { h } from "./dom";
import { EventKind, type MatchEvent, Seat } from "./gen/battleline/v1/types_pb";

const KINDS: Partial<Record<EventKind, string>> = {
  [EventKind.CREATED]: "match created",
  [EventKind.JOINED]: "took a seat",
  [EventKind.GAME_STARTED]: "a game started",
  [EventKind.GAME_OVER]: "the game is over",
  [EventKind.RESIGNED]: "resigned",
  [EventKind.TIMEOUT]: "ran out of time",
};

export function eventLine(event: MatchEvent, names: Map<Seat, string>, ruleset: string): string {
  const who = event.seat === Seat.UNSPECIFIED ? "" : `${names.get(event.seat) ?? "?"}: `;
  const what = event.kind === EventKind.ACTION ? describe(event.text, ruleset) : KINDS[event.kind] ?? event.text;
  return `${who}${what}`;
}

export function renderLog(
  events: Iterable<MatchEvent>, names: Map<Seat, string>, ruleset: string, title: string, testid: string,
  newestFirst = false,
): HTMLElement {
  const items = [...events].map((e) => h("li", { value: Number(e.number) }, eventLine(e, names, ruleset)));
  if (newestFirst) items.reverse();
  const list = h("ol", { class: "events", reversed: newestFirst }, ...items);
  return h("section", { class: "log", "aria-label": title, "data-testid": testid }, h("h2", {}, title), list);
}
