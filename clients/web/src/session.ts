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
