// The start screen: a game against the hosted AI at a chosen level, or an invitation link
// for a friend.

import { h } from "./dom";
import type { KeptGame } from "./session";

export interface LobbyActions {
  playAi(level: number, name: string): void;
  invite(name: string): void;
  /** Take up a game this browser holds a seat in (a tab closed in the middle of it). */
  resume(game: KeptGame): void;
}

const AI_LEVELS = [1, 2, 3, 4, 5];

// What was typed and chosen survives the screen being redrawn.
let typedName = "";
let chosenLevel = 1;

export function renderLobby(actions: LobbyActions, busy: boolean, kept: KeptGame[]): HTMLElement {
  const name = h("input", {
    id: "name", type: "text", maxlength: 40, autocomplete: "nickname", placeholder: "optional",
    value: typedName, "data-testid": "name", oninput: () => { typedName = name.value; },
  });
  const levels = h("fieldset", { class: "levels" }, h("legend", {}, "AI level (1 weakest)"),
    ...AI_LEVELS.map((level) => h("label", { class: "level" },
      h("input", {
        type: "radio", name: "level", value: level, checked: level === chosenLevel,
        "data-testid": `level-${level}`, onchange: () => { chosenLevel = level; },
      }), ` ${level}`)));
  return h("main", { class: "lobby" },
    h("p", { class: "intro" },
      "Nine flags, two armies. Win three flags side by side, or any five, with the stronger formations."),
    h("label", { for: "name" }, "Your name"), name,
    levels,
    h("div", { class: "buttons" },
      h("button", {
        type: "button", class: "primary", disabled: busy, "data-testid": "start-ai",
        onclick: () => actions.playAi(chosenLevel, typedName.trim()),
      }, "Play against the AI"),
      h("button", {
        type: "button", disabled: busy, "data-testid": "invite",
        onclick: () => actions.invite(typedName.trim()),
      }, "Invite a friend")),
    kept.length > 0 && renderKept(actions, busy, kept));
}

/** The games this browser left going on, each to take up again. */
function renderKept(actions: LobbyActions, busy: boolean, kept: KeptGame[]): HTMLElement {
  return h("section", { class: "kept", "data-testid": "kept-games" },
    h("h2", {}, "Your games going on"),
    h("ul", {}, ...kept.map((game) => h("li", {},
      `Against ${game.against}, since ${new Date(game.since).toLocaleString([], { dateStyle: "medium", timeStyle: "short" })} `,
      h("button", {
        type: "button", disabled: busy, "data-testid": "resume",
        onclick: () => actions.resume(game),
      }, "Resume")))));
}

/** The link that joins the match with this invite code. */
function inviteLink(code: string): string {
  return `${location.origin}${location.pathname}#join=${encodeURIComponent(code)}`;
}

/** The invite code in this page's address (#join=CODE or ?join=CODE), if any. */
export function joinCode(): string | null {
  const hash = new URLSearchParams(location.hash.slice(1)).get("join");
  return hash ?? new URLSearchParams(location.search).get("join");
}

export function renderInvite(code: string): HTMLElement {
  const link = inviteLink(code);
  const copy = h("button", { type: "button", "data-testid": "copy-invite" }, "Copy link");
  copy.addEventListener("click", () => {
    void navigator.clipboard?.writeText(link).then(() => { copy.textContent = "Copied"; });
  });
  return h("section", { class: "invite", "data-testid": "invite-box" },
    h("h2", {}, "Invite a friend"),
    h("p", {}, "Send this link; the game starts when your friend opens it."),
    h("input", { type: "text", readonly: true, value: link, "aria-label": "Invitation link", "data-testid": "invite-link" }),
    copy);
}
