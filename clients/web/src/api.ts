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
  if (token !== "") request.header.set("authorization", `Bearer ${token}`);
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
