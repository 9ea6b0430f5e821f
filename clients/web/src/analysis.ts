// The hosted AI's review of a finished match (RecordService.GetReview): each seat's win
// estimate after each of its moves as a graph, and the moves that cost most with the move
// the AI preferred. Every estimate was made from what the mover knew at that moment.
//
// Asked once per match; the page is redrawn whole on every change, so the answer is kept
// here and, when it comes, written into whichever panel of that match is on the page.

import { errorText, records } from "./api";
import { h } from "./dom";
import type { GameReview, MoveReview } from "./gen/battleline/v1/review_pb";
import { Seat } from "./gen/battleline/v1/types_pb";

type Answer = { review: GameReview } | { error: string } | null;  // null: asked, no answer yet

const answers = new Map<string, Answer>();

// Okabe-Ito blue and vermilion, and a dashed line for the second seat: told apart without colour.
const LINES: [Seat, string, string][] = [[Seat.FIRST, "#0072B2", ""], [Seat.SECOND, "#D55E00", "6 4"]];
const WIDTH = 600;
const HEIGHT = 180;
const PAD = 28;
const SVG_NS = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  el.append(...children);
  return el;
}

function percent(value: number): string {
  return `${Math.round(100 * value)}%`;
}

/** Each seat's estimate after each of its moves over the game; costliest moves ringed. */
function graph(review: GameReview, names: Map<Seat, string>): SVGElement {
  const last = Math.max(1, review.moves.length);
  const x = (n: number): number => PAD + ((WIDTH - 2 * PAD) * (n - 1)) / Math.max(1, last - 1);
  const y = (v: number): number => HEIGHT - PAD - (HEIGHT - 2 * PAD) * v;
  const costly = new Set(review.costliest);
  const parts: SVGElement[] = [
    svg("line", { x1: PAD, x2: WIDTH - PAD, y1: y(0.5), y2: y(0.5), stroke: "#999", "stroke-dasharray": "2 3" }),
    ...[0, 0.5, 1].map((v) => svg("text", { x: 2, y: y(v) + 4, "font-size": 11, fill: "#555" }, percent(v))),
    svg("text", { x: WIDTH - PAD, y: HEIGHT - 6, "font-size": 11, fill: "#555", "text-anchor": "end" },
      `move ${last}`),
  ];
  for (const [seat, colour, dash] of LINES) {
    const moves = review.moves.filter((m) => m.seat === seat);
    if (moves.length === 0) continue;
    const points = moves.map((m) => `${x(m.number).toFixed(1)},${y(m.estimateAfter).toFixed(1)}`).join(" ");
    parts.push(svg("polyline", {
      points, fill: "none", stroke: colour, "stroke-width": 2, "stroke-dasharray": dash,
      "data-testid": `review-line-${seat === Seat.FIRST ? 0 : 1}`,
    }, svg("title", {}, `${names.get(seat) ?? "?"}: estimate after each move`)));
    for (const m of moves.filter((m) => costly.has(m.number))) {
      parts.push(svg("circle", { cx: x(m.number), cy: y(m.estimateAfter), r: 5, fill: "none", stroke: colour, "stroke-width": 2 },
        svg("title", {}, `move ${m.number}: ${m.action}, the AI preferred ${m.preferredAction}`)));
    }
  }
  return svg("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: "100%", role: "img", "data-testid": "review-graph",
    "aria-label": "Each player's estimated chance to win over the game",
  }, ...parts);
}

function costlyMove(m: MoveReview, names: Map<Seat, string>): HTMLElement {
  return h("li", { "data-testid": "costly-move" },
    h("strong", {}, `Move ${m.number}, ${names.get(m.seat) ?? "?"}: ${m.action}`),
    ` (${percent(m.estimateBefore)} → ${percent(m.estimateAfter)}). The AI preferred `,
    h("strong", {}, m.preferredAction),
    ` (→ ${percent(m.estimateAfter + m.loss)}, ${(100 * m.loss).toFixed(1)} points more).`);
}

function body(answer: Answer, names: Map<Seat, string>): HTMLElement[] {
  if (answer === null) return [h("p", { class: "status" }, "The AI is reviewing the game…")];
  if ("error" in answer) return [h("p", { class: "error" }, `No review: ${answer.error}`)];
  const { review } = answer;
  const legend = h("p", {}, ...LINES.map(([seat, colour, dash]) =>
    h("span", { style: `color: ${colour}; margin-right: 1rem` },
      `${dash === "" ? "━━" : "╍╍"} ${names.get(seat) ?? "?"}`)));
  const worst = review.costliest.map((n) => review.moves[n - 1]).filter((m) => m !== undefined);
  return [h("div", { class: "review-row" },
    legend,
    graph(review, names),
    worst.length === 0
      ? h("p", {}, "No costly move: every judged move was the AI's choice or close to it.")
      : h("ol", { class: "costliest", "data-testid": "costliest" }, ...worst.map((m) => costlyMove(m, names))),
    h("p", { style: "color: #555; font-size: 0.85em" }, `Judged by ${review.evaluator}.`))];
}

/** Ask for the review once; when it comes, fill the panels of that match on the page. */
function ask(matchId: string, names: Map<Seat, string>): void {
  answers.set(matchId, null);
  const show = (answer: Answer): void => {
    answers.set(matchId, answer);
    for (const panel of document.querySelectorAll<HTMLElement>(`[data-testid="ai-review"][data-match="${CSS.escape(matchId)}"]`)) {
      panel.replaceChildren(panel.firstElementChild ?? "", ...body(answer, names));
    }
  };
  records.getReview({ matchId }).then(
    ({ review }) => show(review === undefined ? { error: "empty answer" } : { review }),
    (err: unknown) => show({ error: errorText(err) }));
}

/** The review panel of a finished match. */
export function renderAnalysis(matchId: string, names: Map<Seat, string>): HTMLElement {
  if (!answers.has(matchId)) ask(matchId, names);
  return h("section", { class: "review ai-review", "data-testid": "ai-review", "data-match": matchId, "aria-live": "polite" },
    h("h2", {}, "The AI's review: chances to win over the game"),
    ...body(answers.get(matchId) ?? null, names));
}
