// One match as this tab's seat: the view, the Watch stream, submitting actions, the record.

import { Code } from "@connectrpc/connect";
import { errorCode, errorText, game, records, setToken } from "./api";
import { handCard, parseAction } from "./actions";
import { MatchPhase, type MatchView } from "./gen/battleline/v1/types_pb";
import { clearSession, forgetGame, type Session } from "./session";
import { NOTHING, type Selection } from "./selection";
import { initial, type Store } from "./state";
import { follow } from "./watch";

export class Game {
  private stream: AbortController | null = null;
  private refreshTimer = 0;
  private recordAsked = false;

  constructor(private readonly store: Store) {}

  /** Show the match of `session` and follow it. */
  open(session: Session): void {
    this.close();
    setToken(session.token);
    this.store.update({
      ...initial, screen: "game", matchId: session.matchId, inviteCode: session.inviteCode,
    });
    this.recordAsked = false;
    this.stream = new AbortController();
    void this.loadHistory();
    void follow(session.matchId, {
      onView: (view) => this.accept(view),
      onEvent: (event, withView) => {
        this.store.addEvents([event]);
        if (!withView) this.scheduleRefresh();
      },
      onError: (message) => {
        // A match that cannot be shown at all (expired, unknown token): back to the lobby.
        if (this.store.state.view !== null) {
          this.store.update({ error: `The live updates stopped: ${message}` });
          return;
        }
        this.leave();
        this.store.update({ error: `The match could not be opened: ${message}` });
      },
    }, this.stream.signal);
  }

  /** Withdraw a match nobody has taken the other seat of (the engine cancels it, so it
   * no longer counts against this browser's limits), then leave it. If the seat was
   * taken meanwhile the engine refuses and the game stays on screen: a cancel never
   * resigns a game its player has not seen. */
  async cancel(): Promise<void> {
    const { matchId } = this.store.state;
    try {
      await game.resign({ matchId, actionId: crypto.randomUUID(), cancelOnly: true });
      this.leave();
    } catch (err) {
      this.store.update({ error: errorText(err) });
    }
  }

  /** Stop following and forget the seat (a game left is over, cancelled, or cannot be
   * opened any more). */
  leave(): void {
    this.close();
    forgetGame(this.store.state.matchId);
    clearSession();
    setToken("");
    this.store.update({ ...initial });
  }

  select(selection: Selection): void {
    this.store.update({ selection, error: "" });
  }

  /** Send actions decided on the current view, all or nothing. */
  async submit(actions: string[]): Promise<void> {
    const { view, matchId, busy } = this.store.state;
    if (view === null || busy) return;
    this.store.update({ busy: true, error: "", selection: NOTHING });
    try {
      const response = await game.submitAction({
        matchId, expectedVersion: view.version, actionId: crypto.randomUUID(), actions,
      });
      this.store.addEvents(response.events);
      if (response.view !== undefined) this.accept(response.view);
    } catch (err) {
      // ABORTED: the match moved on (e.g. a clock ran out); show the new view to decide again.
      this.store.update({ error: errorCode(err) === Code.Aborted ? "" : errorText(err) });
      await this.refresh();
    } finally {
      this.store.update({ busy: false });
    }
  }

  /** Ask the hosted AI what it would do here; its card is picked, so its flags light up. */
  async hint(): Promise<void> {
    const { matchId, view } = this.store.state;
    if (view === null) return;
    try {
      const { version, suggestion } = await game.getHint({ matchId, budgetMs: 1000 });
      if (suggestion === undefined) return;
      const choice = parseAction(suggestion.action);
      const card = handCard(choice);
      this.store.update({
        hint: {
          version, action: suggestion.action,
          estimate: suggestion.iterations > 0 ? suggestion.winEstimate : null,
        },
        selection: version === this.store.state.view?.version && card !== null
          ? { card, target: "target" in choice ? `${choice.target}@${choice.flag}` : null }
          : this.store.state.selection,
      });
    } catch (err) {
      const off = [Code.PermissionDenied, Code.FailedPrecondition, Code.Unavailable].includes(errorCode(err));
      this.store.update({ error: `No hint: ${errorText(err)}`, hintsOff: off });
    }
  }

  async resign(): Promise<void> {
    const { matchId } = this.store.state;
    try {
      const response = await game.resign({ matchId, actionId: crypto.randomUUID() });
      if (response.view !== undefined) this.accept(response.view);
    } catch (err) {
      this.store.update({ error: errorText(err) });
    }
  }

  private close(): void {
    this.stream?.abort();
    this.stream = null;
    clearTimeout(this.refreshTimer);
  }

  /** One GetView for a burst of events that came without a view. */
  private scheduleRefresh(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => void this.refresh(), 150);
  }

  private async refresh(): Promise<void> {
    try {
      const { view } = await game.getView({ matchId: this.store.state.matchId });
      if (view !== undefined) this.accept(view);
    } catch (err) {
      this.store.update({ error: errorText(err) });
    }
  }

  private accept(view: MatchView): void {
    this.store.setView(view);
    if (view.phase === MatchPhase.FINISHED && !this.recordAsked) {
      forgetGame(view.matchId);
      this.recordAsked = true;
      void this.loadRecord();
    }
  }

  /** The moves made before this page opened (the stream starts from a snapshot). */
  private async loadHistory(): Promise<void> {
    try {
      const record = await records.getRecord({ matchId: this.store.state.matchId });
      this.store.addEvents(record.events);
    } catch {
      // the log then starts with the stream; nothing else depends on it
    }
  }

  /** The whole record, every card revealed, once the match is over. */
  private async loadRecord(): Promise<void> {
    try {
      const record = await records.getRecord({ matchId: this.store.state.matchId });
      if (record.complete) this.store.update({ record });
    } catch (err) {
      this.store.update({ error: errorText(err) });
    }
  }
}
