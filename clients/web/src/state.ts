// The page's state in one place, and the one way to change it: `update` notifies the renderer.

import type { GetRecordResponse } from "./gen/battleline/v1/record_pb";
import type { MatchEvent, MatchView } from "./gen/battleline/v1/types_pb";
import { NOTHING, type Selection } from "./selection";

export interface State {
  screen: "lobby" | "game";
  matchId: string;
  inviteCode: string;
  view: MatchView | null;
  /** performance.now() when `view` arrived, to run its clocks down locally. */
  viewAt: number;
  /** Events by number. */
  events: Map<bigint, MatchEvent>;
  selection: Selection;
  /** A request is in flight: actions are not offered twice. */
  busy: boolean;
  /** The last refusal or failure, in words. */
  error: string;
  /** The complete record, fetched once the match is over. */
  record: GetRecordResponse | null;
  /** The hosted AI's suggestion for the view of that version. */
  hint: Hint | null;
  /** The server gives no hints for this match (between two people, or no AI service). */
  hintsOff: boolean;
}

export interface Hint {
  version: bigint;
  action: string;
  /** Estimated chance to win after the action, 0..1; null when nothing was searched. */
  estimate: number | null;
}

export const initial: State = {
  screen: "lobby", matchId: "", inviteCode: "", view: null, viewAt: 0,
  events: new Map(), selection: NOTHING, busy: false, error: "", record: null,
  hint: null, hintsOff: false,
};

type Listener = (state: State) => void;

export class Store {
  private current: State = initial;
  private readonly listeners: Listener[] = [];

  get state(): State {
    return this.current;
  }

  update(patch: Partial<State>): void {
    this.current = { ...this.current, ...patch };
    for (const listener of this.listeners) listener(this.current);
  }

  subscribe(listener: Listener): void {
    this.listeners.push(listener);
  }

  /** Keep `view` unless a newer one is already held (a stream can lag behind an answer). */
  setView(view: MatchView): void {
    const old = this.current.view;
    if (old !== null && view.version < old.version) return;
    const moved = old === null || view.version !== old.version;
    this.update({
      view, viewAt: performance.now(),
      selection: moved ? NOTHING : this.current.selection,
    });
  }

  addEvents(events: readonly MatchEvent[]): void {
    if (events.every((e) => this.current.events.has(e.number))) return;
    const all = new Map(this.current.events);
    for (const e of events) all.set(e.number, e);
    this.update({ events: new Map([...all].sort((a, b) => (a[0] < b[0] ? -1 : 1))) });
  }
}
