// Following a match on its Watch stream: events and views as they come, reconnecting
// with backoff after a failure and resuming after the last event received.

import { errorCode, errorText, game, RETRY, sleep, watcher } from "./api";
import { MatchPhase, type MatchEvent, type MatchView } from "./gen/battleline/v1/types_pb";

export interface Follower {
  onView(view: MatchView): void;
  onEvent(event: MatchEvent, withView: boolean): void;
  onError(message: string): void;
}

/** Follow until the match is over or `signal` aborts. */
export async function follow(matchId: string, follower: Follower, signal: AbortSignal): Promise<void> {
  let last: bigint | undefined;
  let delay = 250;
  while (!signal.aborted) {
    try {
      if (last !== undefined) {
        // A stream resumed exactly after the last event of a finished match never ends.
        const { view } = await game.getView({ matchId }, { signal });
        if (view !== undefined) {
          follower.onView(view);
          if (view.phase === MatchPhase.FINISHED && view.lastEventNumber <= last) return;
        }
      }
      const stream = watcher.watch({ matchId, resumeAfter: last, includeViews: true }, { signal });
      for await (const message of stream) {
        delay = 250;
        const item = message.item;
        if (item.case === "snapshot") {
          last = item.value.lastEventNumber;
          follower.onView(item.value);
        } else if (item.case === "event") {
          last = item.value.number;
          follower.onEvent(item.value, message.view !== undefined);
        }
        if (message.view !== undefined) follower.onView(message.view);
      }
    } catch (err) {
      if (signal.aborted) return;
      if (!RETRY.has(errorCode(err))) {
        follower.onError(errorText(err));
        return;
      }
    }
    await sleep(delay + Math.random() * delay);
    delay = Math.min(delay * 2, 8000);
  }
}
