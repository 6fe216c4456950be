// Text of the language status item and of the plan lenses. Pure; extension.ts and server.ts own the vscode objects.
import type { WorkflowRow } from "./workflows";

export interface StatusView {
  text: string;
  detail: string;
  severity: "information" | "warning" | "error";
  busy: boolean;
}

export function statusView(state: "stopped" | "starting" | "running" | "failed", info: {
  version?: string; rules?: number; error?: string; source?: string; rows: WorkflowRow[];
}): StatusView {
  if (state === "starting") return { text: "Baton: starting", detail: info.source ? `from ${info.source}` : "", severity: "information", busy: true };
  if (state === "failed") return { text: "$(error) Baton", detail: info.error ?? "the server is not running", severity: "error", busy: false };
  if (state === "stopped") return { text: "Baton: stopped", detail: "", severity: "warning", busy: false };
  const running = info.rows.filter((r) => r.running);
  const parts = [info.version ? `baton-lsp ${info.version}` : "", info.rules !== undefined ? `${info.rules} rules` : ""].filter(Boolean);
  if (running.length > 0) {
    const first = running[0];
    // The server's words for the run's state (`text`), the ones its lens and progress show.
    const state = first.text ?? first.state;
    const what = `${first.description || first.workflow_id}${state ? ` (${state})` : ""}`;
    return {
      text: running.length > 1 ? `$(sync~spin) Baton: ${running.length} workflows` : `$(sync~spin) Baton: ${state ?? "running"}`,
      detail: [`running: ${what}${running.length > 1 ? ` and ${running.length - 1} more` : ""}`, ...parts].join(" · "),
      severity: "information", busy: true,
    };
  }
  return { text: "$(check) Baton", detail: parts.join(" · "), severity: "information", busy: false };
}

/** The server's lens marks (plain Unicode, for every editor) → VS Code codicons, which render
 * in code lens titles where a glyph such as ⏸ may be missing from the editor font. */
const LENS_ICONS: Record<string, string> = {
  "✓": "$(check)", "✗": "$(error)", "⏸": "$(debug-pause)", "⟳": "$(sync~spin)",
  "●": "$(circle-filled)", "○": "$(circle-outline)", "⚠": "$(warning)",
};

export function lensTitle(title: string): string {
  const mark = [...title][0] ?? "";
  const icon = LENS_ICONS[mark];
  return icon ? icon + title.slice(mark.length) : title;
}
