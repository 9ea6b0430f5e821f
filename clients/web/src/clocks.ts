// Both clocks, run down locally between views from the server's remaining time.

import type { Duration } from "@bufbuild/protobuf/wkt";
import { h } from "./dom";
import type { Clock, MatchView } from "./gen/battleline/v1/types_pb";

function millis(d: Duration | undefined): number {
  return d === undefined ? 0 : Number(d.seconds) * 1000 + d.nanos / 1e6;
}

function clockText(clock: Clock, since: number): string {
  const left = Math.max(0, millis(clock.remaining) - (clock.running ? performance.now() - since : 0));
  const seconds = Math.ceil(left / 1000);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

export function renderClock(clock: Clock | undefined, since: number): HTMLElement | null {
  if (clock === undefined) return null;
  return h("span", {
    class: `clock${clock.running ? " running" : ""}`, "data-clock": clock.seat,
    "aria-label": `clock${clock.running ? ", running" : ""}`, "data-testid": `clock-${clock.seat}`,
  }, clockText(clock, since));
}

/** Every quarter second, the running clock's text; nothing else is redrawn. */
export function tickClocks(current: () => { view: MatchView | null; viewAt: number }): void {
  window.setInterval(() => {
    const { view, viewAt } = current();
    for (const clock of view?.clocks ?? []) {
      if (!clock.running) continue;
      const el = document.querySelector(`[data-clock="${clock.seat}"]`);
      if (el !== null) el.textContent = clockText(clock, viewAt);
    }
  }, 250);
}
