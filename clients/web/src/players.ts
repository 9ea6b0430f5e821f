// One seat's public information: name, hand counts per deck, tactics played, flags,
// series score, discards and clock.

import { cardFace } from "./cardview";
import { renderClock } from "./clocks";
import { h } from "./dom";
import { type MatchView, type PlayerInfo, Seat } from "./gen/battleline/v1/types_pb";

export function renderPlayer(view: MatchView, seat: Seat, name: string, viewAt: number): HTMLElement {
  const player: PlayerInfo | undefined = view.players.find((p) => p.seat === seat);
  const ruleset = view.options?.ruleset ?? "standard";
  const toAct = view.currentSeat === seat;
  const counts = (player?.handCounts ?? []).filter((c) => c.count > 0 || c.deck === "troop");
  const series = (view.options?.seriesGames ?? 0) > 1;
  const who = seat === view.viewer ? "me" : "them";
  return h("section", {
    class: `player ${who}${toAct ? " to-act" : ""}`, "aria-label": name, "data-testid": `player-${who}`,
  },
  h("h2", {}, name, toAct && h("span", { class: "turn-dot", "aria-label": "to act" }, " ●"),
    player !== undefined && !player.occupied && h("span", { class: "muted" }, " (waiting)")),
  // The engine's mark of the hosted AI's seat: a name is only a player's word.
  player?.hostedAi === true && h("p", { class: "hosted-ai", "data-testid": "hosted-ai" },
    "The service's AI"),
  h("dl", { class: "facts" },
    h("dt", {}, "Hand"),
    h("dd", { "data-testid": `hand-count-${who}` },
      counts.map((c) => `${c.count} ${c.deck}`).join(", ") || "0"),
    h("dt", {}, "Tactics played"), h("dd", {}, String(player?.tacticsPlayed ?? 0)),
    h("dt", {}, "Flags"), h("dd", {}, String(player?.flagsClaimed ?? 0)),
    series && h("dt", {}, "Series points"), series && h("dd", {}, String(player?.seriesScore ?? 0)),
    view.clocks.length > 0 && h("dt", {}, "Clock"),
    view.clocks.length > 0 && h("dd", {}, renderClock(view.clocks.find((c) => c.seat === seat), viewAt))),
  (player?.discards.length ?? 0) > 0 && h("div", { class: "discards" },
    h("span", { class: "muted" }, "Discards: "),
    ...(player?.discards ?? []).map((card) => cardFace(card, ruleset, "small"))));
}
