#!/usr/bin/env node
// Battle Line Online from Node.js: @grpc/grpc-js with the protos loaded at run time
// from protos/battleline/v1 (nothing generated is checked in).
//
//   node play.js --target 127.0.0.1:50051                 a LOCAL match, both seats
//   node play.js --target HOST:PORT --friend               a private match: prints its invite code
//   BATTLELINE_INVITE=CODE node play.js --target HOST:PORT take a friend's open seat
//                                                          (or --join CODE: a command line
//                                                          is readable by every local user)
//   node play.js --target HOST:PORT --ai 3                 play one seat against the hosted AI
//   --protos DIR    the contract's proto root (default: this checkout's protos/)
//
// Every seat plays uniformly random legal actions taken from its view, sending
// the view's version as expected_version and a fresh action id each time. The
// opponent's moves are awaited on the Watch stream; when it drops (a lost connection,
// an engine restarted), a fresh view is read and the stream opened again from its last
// event, with backoff, for up to a minute. Prints the result and
// exits 0 once the match is over. A refusal is read as the engine sends it: a status code,
// and in the rich status details an ErrorInfo reason and, for limits, a RetryInfo
// delay (see `refusal`).
"use strict";

const crypto = require("node:crypto");
const path = require("node:path");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");
const protobuf = require("protobufjs");

function parseArgs(argv) {
  const args = { target: "127.0.0.1:50051", ruleset: "standard", seed: null, join: null,
    ai: null, friend: false, timeoutS: 300,
    protos: path.resolve(__dirname, "..", "..", "protos") };
  for (let i = 0; i < argv.length; i += 1) {
    const key = argv[i];
    const value = argv[i + 1];
    if (key === "--friend") { args.friend = true; continue; }
    if (key === "--target") args.target = value;
    else if (key === "--ruleset") args.ruleset = value;
    else if (key === "--seed") args.seed = value;
    else if (key === "--join") args.join = value;
    else if (key === "--ai") args.ai = Number(value);
    else if (key === "--timeout") args.timeoutS = Number(value);
    else if (key === "--protos") args.protos = path.resolve(value);
    else throw new Error(`unknown argument ${key}`);
    i += 1;
  }
  if (args.ai !== null && !(Number.isInteger(args.ai) && args.ai >= 1 && args.ai <= 10)) {
    throw new Error("--ai takes a level from 1 to 10");
  }
  if (!(args.timeoutS > 0)) throw new Error("--timeout takes seconds, more than 0");
  // The invite code by environment when no mode is on the command line.
  const invite = process.env.BATTLELINE_INVITE;
  if (invite && args.join === null && !args.friend && args.ai === null) {
    args.join = invite;
    console.log("joining the match of the invite code in BATTLELINE_INVITE");
  }
  const modes = [args.friend, args.join !== null, args.ai !== null].filter(Boolean).length;
  if (modes > 1) throw new Error("choose one of --friend, --join and --ai");
  if (args.seed !== null && modes) {
    throw new Error("--seed goes with a LOCAL match only: whoever knows it knows the " +
      "other seat's hand");
  }
  return args;
}

function loadServices(target, protos) {
  const definition = protoLoader.loadSync(
    ["battleline/v1/lobby.proto", "battleline/v1/game.proto", "battleline/v1/watch.proto"],
    { includeDirs: [protos], keepCase: true, longs: String, enums: String, defaults: true,
      oneofs: true });
  const v1 = grpc.loadPackageDefinition(definition).battleline.v1;
  const credentials = grpc.credentials.createInsecure();
  return {
    lobby: new v1.LobbyService(target, credentials),
    game: new v1.GameService(target, credentials),
    watch: new v1.WatchService(target, credentials),
  };
}

// googleapis' google.rpc messages of a refusal's details (the grpc-status-details-bin
// trailer), declared by their field numbers rather than loaded from googleapis' files.
const RPC = protobuf.Root.fromJSON({ nested: { google: { nested: {
  protobuf: { nested: {
    Any: { fields: { typeUrl: { type: "string", id: 1 }, value: { type: "bytes", id: 2 } } },
    Duration: { fields: { seconds: { type: "int64", id: 1 }, nanos: { type: "int32", id: 2 } } },
  } },
  rpc: { nested: {
    Status: { fields: { code: { type: "int32", id: 1 }, message: { type: "string", id: 2 },
      details: { rule: "repeated", type: "google.protobuf.Any", id: 3 } } },
    ErrorInfo: { fields: { reason: { type: "string", id: 1 }, domain: { type: "string", id: 2 } } },
    RetryInfo: { fields: { retryDelay: { type: "google.protobuf.Duration", id: 1 } } },
  } },
} } } });

// The reason (ErrorInfo) and the delay to wait in ms (RetryInfo) of a refused call.
function refusal(err) {
  const found = { reason: "", retryMs: 0 };
  const [bytes] = err.metadata ? err.metadata.get("grpc-status-details-bin") : [];
  if (!bytes) return found;
  for (const any of RPC.lookupType("google.rpc.Status").decode(bytes).details) {
    const name = any.typeUrl.slice(any.typeUrl.lastIndexOf("/") + 1);
    if (name === "google.rpc.ErrorInfo") {
      found.reason = RPC.lookupType(name).decode(any.value).reason;
    } else if (name === "google.rpc.RetryInfo") {
      const delay = RPC.lookupType(name).decode(any.value).retryDelay || {};
      found.retryMs = Number(delay.seconds || 0) * 1000 + (delay.nanos || 0) / 1e6;
    }
  }
  return found;
}

function auth(token) {
  const metadata = new grpc.Metadata();
  if (token) metadata.set("authorization", `Bearer ${token}`);
  return metadata;
}

// A unary call as a promise; a refusal becomes an Error with its status code, reason
// and retry delay.
function call(client, method, request, token) {
  return new Promise((resolve, reject) => {
    const deadline = new Date(Date.now() + 10000);
    client[method](request, auth(token), { deadline }, (err, response) => {
      if (err) {
        const code = Object.keys(grpc.status).find((k) => grpc.status[k] === err.code);
        const { reason, retryMs } = refusal(err);
        reject(Object.assign(new Error(`${method}: ${code} ${reason}: ${err.details}`),
          { code: err.code, reason, retryMs }));
      } else {
        resolve(response);
      }
    });
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// A secret of our own for a seat token (32 random bytes, URL-safe base64): a create or
// join sent with it can be sent again after a lost answer and gets the same seat back.
const seatSecret = () => crypto.randomBytes(32).toString("base64url");

// How long a call is sent again, or a dropped stream opened again, before giving up.
const RETRY_BUDGET_MS = 60000;

// A wait before attempt `attempt` again: full jitter under a cap that doubles each time
// (up to 4 s), so many clients do not retry in step; never less than the server asked.
const backoffMs = (attempt, atLeastMs = 0) =>
  Math.max(atLeastMs, Math.random() * Math.min(4000, 250 * 2 ** attempt));

// `call`, sent again unchanged while the server is unavailable (its answer may have
// been lost) or refuses for a rate (nothing was done), after the wait it asks for:
// safe for a create or join with a seat secret, or an action with its action id.
async function resent(client, method, request, token) {
  const deadline = Date.now() + RETRY_BUDGET_MS;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call(client, method, request, token);
    } catch (err) {
      const again = err.code === grpc.status.UNAVAILABLE || err.reason === "rate-limited";
      if (!again || Date.now() > deadline) throw err;
      await sleep(backoffMs(attempt, err.retryMs));
    }
  }
}

// The codes after which a dropped Watch stream is opened again (docs/client-guide.md,
// "Resuming"), and RESOURCE_EXHAUSTED (too many streams for now) after its delay.
const RESUMABLE = new Set([grpc.status.UNAVAILABLE, grpc.status.CANCELLED,
  grpc.status.DEADLINE_EXCEEDED, grpc.status.INTERNAL, grpc.status.UNKNOWN,
  grpc.status.RESOURCE_EXHAUSTED]);
const myTurn = (view) => view.phase === "MATCH_PHASE_PLAYING" && view.legal_actions.length > 0;
const finished = (view) => view.phase === "MATCH_PHASE_FINISHED";

class Seat {
  constructor(services, matchId, token) {
    this.services = services;
    this.matchId = matchId;
    this.token = token;
    this.requests = 0;
  }

  async view() {
    const response = await resent(this.services.game, "GetView", { match_id: this.matchId },
      this.token);
    return response.view;
  }

  // Submit one random legal action decided on `view`; returns the view after it.
  async playRandom(view) {
    const actions = [view.legal_actions[crypto.randomInt(view.legal_actions.length)]];
    const request = { match_id: this.matchId, expected_version: view.version,
      action_id: crypto.randomUUID(), actions };
    try {
      const response = await resent(this.services.game, "SubmitAction", request, this.token);
      this.requests += 1;
      return response.view;
    } catch (err) {
      if (err.code === grpc.status.ABORTED) return this.view(); // stale: decide again
      throw err;
    }
  }

  // Cancel a match nobody joined (never resigns a game that has begun).
  async cancel() {
    await call(this.services.game, "Resign", { match_id: this.matchId,
      action_id: crypto.randomUUID(), cancel_only: true }, this.token);
  }

  // `next()` resolves with the next view the Watch stream carries (include_views), in
  // order, or with null once the stream has ended (`failure()`: null) or failed.
  watch(resumeAfter) {
    const queue = [];
    const waiting = [];
    let over = false;
    let failure = null;
    const end = (err) => {
      failure = err || null;
      over = true;
      while (waiting.length) waiting.shift()(null);
    };
    const stream = this.services.watch.Watch(
      { match_id: this.matchId, include_views: true, resume_after: resumeAfter },
      auth(this.token));
    stream.on("data", (message) => {
      if (!message.view) return;
      const next = waiting.shift();
      if (next) next(message.view); else queue.push(message.view);
    });
    stream.on("error", end);
    stream.on("end", () => end(null));
    return {
      next: () => {
        if (queue.length) return Promise.resolve(queue.shift());
        if (over) return Promise.resolve(null);
        return new Promise((resolve) => waiting.push(resolve));
      },
      failure: () => failure,
      close: () => stream.cancel(),
    };
  }
}

// Both seats of a LOCAL match, alternating by whoever has legal actions.
async function playLocal(services, args) {
  const request = { options: { ruleset: args.ruleset, time_control: {
    kind: "TIME_CONTROL_KIND_NONE" } }, seat: "SEAT_CHOICE_FIRST",
  opponent: { kind: "OPPONENT_KIND_LOCAL" }, seat_options: { auto_claim: true,
    display_name: "node" }, seat_secret: seatSecret() };
  if (args.seed !== null) request.seed = args.seed;
  const created = await resent(services.lobby, "CreateMatch", request);
  console.log(`created LOCAL match ${created.match_id}`);
  const seats = [new Seat(services, created.match_id, created.seat_token),
    new Seat(services, created.match_id, created.other_seat_token)];
  const views = [await seats[0].view(), await seats[1].view()];
  while (!finished(views[0])) {
    const i = myTurn(views[0]) ? 0 : 1;
    if (!myTurn(views[i])) throw new Error("nobody can act");
    views[i] = await seats[i].playRandom(views[i]);
    if (!myTurn(views[i])) views[1 - i] = await seats[1 - i].view();
  }
  return { view: views[0], requests: seats[0].requests + seats[1].requests };
}

// One seat; the other is a friend or the hosted AI, whose moves come on the stream.
async function playOneSeat(seat, timeoutS) {
  let view = await seat.view();
  const deadline = Date.now() + timeoutS * 1000;
  while (view.phase === "MATCH_PHASE_WAITING") {
    if (Date.now() > deadline) {
      const cancelled = await seat.cancel().then(() => true, (err) => {
        if (err.reason === "joined") return false; // taken at the last moment: play it
        throw err;
      });
      if (cancelled) {
        throw new Error(`nobody took the other seat within ${timeoutS} s: match cancelled`);
      }
    }
    await sleep(250);
    view = await seat.view();
  }
  let stream = seat.watch(view.last_event_number);
  let drops = 0; // streams lost since the game last moved on
  let failingSince = 0;
  try {
    while (!finished(view)) {
      if (myTurn(view)) {
        drops = 0;
        view = await seat.playRandom(view);
      } else {
        // A streamed view can be older than the answer to our own last action.
        const next = await stream.next();
        if (next !== null) {
          drops = 0;
          if (Number(next.version) > Number(view.version)) view = next;
          continue;
        }
        // The stream ended or failed: wait (unless it ended cleanly, as at the end of
        // the match), read the view now and open a stream again from its last event.
        const err = stream.failure();
        stream.close();
        if (err && !RESUMABLE.has(err.code)) throw new Error(`Watch: ${err.details}`);
        drops += 1;
        if (drops === 1) failingSince = Date.now();
        else if (Date.now() - failingSince > RETRY_BUDGET_MS) throw new Error("Watch: kept failing");
        if (err || drops > 1) await sleep(backoffMs(drops, err ? refusal(err).retryMs : 0));
        view = await seat.view();
        if (finished(view)) break;
        console.log(`watch stream lost: resuming after event ${view.last_event_number}`);
        stream = seat.watch(view.last_event_number);
      }
    }
  } finally {
    stream.close();
  }
  return { view, requests: seat.requests };
}

// A value as one word of a POSIX shell's command line: the invite code is the server's
// text, and one written as `$(...)` would run in the shell of the friend who pastes it.
function shellQuoted(value) {
  return /^[A-Za-z0-9_.:@%+=,\/-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const services = loadServices(args.target, args.protos);
  let outcome;
  if (args.friend) {
    const created = await resent(services.lobby, "CreateMatch", { options: {
      ruleset: args.ruleset }, seat: "SEAT_CHOICE_RANDOM",
    opponent: { kind: "OPPONENT_KIND_OPEN", private: true },
    seat_options: { auto_claim: true, display_name: "node" }, seat_secret: seatSecret() });
    console.log(`invite code: ${created.invite_code} (your friend runs: ` +
      `BATTLELINE_INVITE=${shellQuoted(created.invite_code)} node play.js --target ` +
      `${shellQuoted(args.target)})`);
    outcome = await playOneSeat(new Seat(services, created.match_id, created.seat_token),
      args.timeoutS);
  } else if (args.join) {
    const joined = await resent(services.lobby, "JoinMatch", { invite_code: args.join,
      seat_secret: seatSecret(),
      seat_options: { auto_claim: true, display_name: "node" } });
    console.log(`joined match ${joined.match_id} as ${joined.seat}`);
    outcome = await playOneSeat(new Seat(services, joined.match_id, joined.seat_token),
      args.timeoutS);
  } else if (args.ai) {
    const created = await resent(services.lobby, "CreateMatch", { options: {
      ruleset: args.ruleset }, seat: "SEAT_CHOICE_RANDOM",
    opponent: { kind: "OPPONENT_KIND_AI", ai_level: args.ai },
    seat_options: { auto_claim: true, display_name: "node" }, seat_secret: seatSecret() });
    console.log(`created match ${created.match_id} against the hosted AI level ${args.ai}`);
    outcome = await playOneSeat(new Seat(services, created.match_id, created.seat_token),
      args.timeoutS);
  } else {
    outcome = await playLocal(services, args);
  }
  const { view, requests } = outcome;
  console.log(`match over: winner ${view.winner} by ${view.end_reason} after ${requests} ` +
    `requests (match ${view.match_id}, version ${view.version})`);
  for (const client of Object.values(services)) client.close();
}

main().catch((err) => {
  console.error(`error: ${err.message}`);
  process.exit(1);
});
