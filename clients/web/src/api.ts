// The transport (Connect protocol on the page's own origin) and the four service clients.
// The seat token rides on every call as `authorization: Bearer <token>`.

import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { GameService } from "./gen/battleline/v1/game_pb";
import { LobbyService } from "./gen/battleline/v1/lobby_pb";
import { RecordService } from "./gen/battleline/v1/record_pb";
import { WatchService } from "./gen/battleline/v1/watch_pb";

let token = "";

/** The seat token sent from now on ("" for none). */
export function setToken(value: string): void {
  token = value;
}

const bearer: Interceptor = (next) => (request) => {
  // A call that names its own seat (a kept game looked at from the lobby) keeps it.
  if (token !== "" && !request.header.has("authorization")) {
    request.header.set("authorization", `Bearer ${token}`);
  }
  return next(request);
};

const transport = createConnectTransport({ baseUrl: location.origin, interceptors: [bearer] });

export const lobby = createClient(LobbyService, transport);
export const game = createClient(GameService, transport);
export const watcher = createClient(WatchService, transport);
export const records = createClient(RecordService, transport);

/** A refusal in words: the server's message, else the code's name. */
export function errorText(err: unknown): string {
  const e = ConnectError.from(err);
  return e.rawMessage !== "" ? e.rawMessage : Code[e.code];
}

export function errorCode(err: unknown): Code {
  return ConnectError.from(err).code;
}

/** A creator's or joiner's own secret for its seat token: 32 random bytes in URL-safe
 * base64. With it, the same CreateMatch sent again answers the same match instead of
 * making another, the same JoinMatch the same seat instead of "match-full". */
export function newSeatSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** What a call that may have been lost on the way ends with (a dropped connection reads
 * as Unknown): worth sending again if it answers the same when repeated. */
export const LOST = new Set([
  Code.Unavailable, Code.Canceled, Code.DeadlineExceeded, Code.Internal, Code.Unknown,
]);

/** LOST, or refused for a moment (a rate): worth sending again. */
export const RETRY = new Set([...LOST, Code.ResourceExhausted]);

export const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** `call` sent again (up to `tries` times, after a growing random pause) while it fails
 * with a code in `worth`: only for a request that answers the same when repeated, as a
 * create or a join with its secret does. */
export async function resentIfLost<T>(call: () => Promise<T>, worth = RETRY, tries = 4): Promise<T> {
  for (let delay = 250; ; delay *= 2) {
    try {
      return await call();
    } catch (err) {
      if (!worth.has(errorCode(err)) || --tries <= 0) throw err;
    }
    await sleep(delay + Math.random() * delay);
  }
}
