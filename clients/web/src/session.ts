// The seat this tab holds, kept in sessionStorage so a reload resumes the match.

export interface Session {
  matchId: string;
  token: string;
  /** The invite code of a match this tab created for a friend. */
  inviteCode: string;
}

const KEY = "battleline.session";

export function loadSession(): Session | null {
  const raw = sessionStorage.getItem(KEY);
  if (raw === null) return null;
  try {
    const s = JSON.parse(raw) as Partial<Session>;
    if (typeof s.matchId === "string" && typeof s.token === "string") {
      return { matchId: s.matchId, token: s.token, inviteCode: s.inviteCode ?? "" };
    }
  } catch {
    // unreadable: start over
  }
  sessionStorage.removeItem(KEY);
  return null;
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

export function clearSession(): void {
  sessionStorage.removeItem(KEY);
}

// The games this browser is playing, kept in localStorage until they end: a tab closed
// by mistake (sessionStorage goes with it) left its game running to a loss on time,
// its seat token gone. The lobby lists them, and any tab takes one up again.

/** A game this browser holds a seat in, not yet seen to end. */
export interface KeptGame extends Session {
  /** Whom it is played against, as the lobby says it: "AI level 3", "a friend". */
  against: string;
  /** When it began here (ms since the epoch). */
  since: number;
}

const GAMES_KEY = "battleline.games";
const MAX_KEPT = 8;

export function keptGames(): KeptGame[] {
  try {
    const raw: unknown = JSON.parse(localStorage.getItem(GAMES_KEY) ?? "[]");
    if (!Array.isArray(raw)) return [];
    return raw.filter((g): g is KeptGame => typeof g?.matchId === "string"
      && typeof g.token === "string" && typeof g.inviteCode === "string"
      && typeof g.against === "string" && typeof g.since === "number");
  } catch {
    return []; // unreadable: none kept
  }
}

/** Keep the seat of `session` until its match is seen to end (the newest MAX_KEPT). */
export function keepGame(session: Session, against: string): void {
  const others = keptGames().filter((g) => g.matchId !== session.matchId);
  const game: KeptGame = { ...session, against, since: Date.now() };
  localStorage.setItem(GAMES_KEY, JSON.stringify([game, ...others].slice(0, MAX_KEPT)));
}

export function forgetGame(matchId: string): void {
  const left = keptGames().filter((g) => g.matchId !== matchId);
  localStorage.setItem(GAMES_KEY, JSON.stringify(left));
}
