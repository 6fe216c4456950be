// Read-only Markdown documents the extension renders (a workflow's status, an error-log
// record) instead of raw JSON in an untitled buffer that asks to be saved. Served by a
// TextDocumentContentProvider, so VS Code shows them read-only and its Markdown preview
// renders them.
import * as vscode from "vscode";

export const SCHEME = "baton-doc";

/** One table cell: no line breaks, no column separators. */
function cell(v: unknown): string {
  return String(v ?? "").replace(/\r?\n/g, " ").replace(/\|/g, "\\|");
}

function fence(value: unknown): string {
  const text = JSON.stringify(value, null, 2);
  const ticks = "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  return `${ticks}json\n${text}\n${ticks}`;
}

function seconds(ms: unknown): string {
  return typeof ms === "number" ? `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s` : "";
}

function link(label: string, path: unknown): string {
  return typeof path === "string" && path ? `- ${label}: [${cell(path)}](${vscode.Uri.file(path).toString()})` : "";
}

/** `baton status ID --json` as a page: headline, failure, steps, files, then the record. */
export function statusMarkdown(info: Record<string, unknown>): string {
  const id = String(info.workflow_id ?? "");
  const title = typeof info.description === "string" && info.description ? info.description : id;
  const out: string[] = [`# ${cell(title)}`, ""];
  const head = [`**${cell(info.running ? "running" : info.status ?? "unknown")}**`];
  if (info.state) head.push(`in ${cell(info.state)}`);
  if (info.scope) head.push(`· ${cell(info.scope)}`);
  if (info.updated_at) head.push(`· updated ${cell(info.updated_at)}`);
  if (typeof info.checkpoint === "number") head.push(`· checkpoint #${info.checkpoint}`);
  out.push(head.join(" "), "", `Workflow \`${id}\``, "");
  const failure = info.failure as Record<string, unknown> | null | undefined;
  const problem = failure?.message ?? info.last_error ?? info.problem;
  if (problem) out.push(`> ${cell(problem)}`, "");
  const steps = Object.entries((info.steps ?? {}) as Record<string, Record<string, unknown>>);
  if (steps.length) {
    out.push("## Steps", "", "| Step | State | Status | Attempts | Time | Message |", "|---|---|---|---|---|---|");
    for (const [sid, s] of steps) {
      out.push(`| ${cell(sid)} | ${cell(s.state)} | ${cell(s.status)} | ${cell(s.attempts)} | ${seconds(s.duration_ms)} | ${cell(s.message)} |`);
    }
    out.push("");
  }
  const files = [link("Plan", info.plan), link("Topic directory", info.topic_dir), link("Checkpoint", info.checkpoint_path)].filter(Boolean);
  if (files.length) out.push("## Files", "", ...files, "");
  out.push("## Record", "", fence(info), "");
  return out.join("\n");
}

/** One `errors.jsonl` record as a page: what failed, where, then the record. */
export function errorMarkdown(record: Record<string, unknown>, path: string, line: number): string {
  const out: string[] = [`# ${cell(record.error_type ?? "error")}: ${cell(record.workflow_id ?? "")}`, ""];
  if (record.error_message) out.push(`> ${cell(record.error_message)}`, "");
  const rows: [string, unknown][] = [["When", record.timestamp], ["Source", record.source], ["Command", record.command],
    ["Status", record.status], ["Repair plan", record.repair_plan_path]];
  const shown = rows.filter(([, v]) => v !== undefined && v !== null && v !== "");
  if (shown.length) out.push("| | |", "|---|---|", ...shown.map(([k, v]) => `| ${k} | ${cell(v)} |`), "");
  const context = record.context as Record<string, unknown> | undefined;
  if (context && Object.keys(context).length) out.push("## Context", "", fence(context), "");
  out.push(`From [errors.jsonl line ${line + 1}](${vscode.Uri.file(path).toString()}#L${line + 1})`, "", "## Record", "", fence(record), "");
  return out.join("\n");
}

/** Holds the rendered pages by URI; each new page gets its own URI so previews stay apart. */
export class ReadOnlyDocs implements vscode.TextDocumentContentProvider {
  private readonly pages = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  register(context: vscode.ExtensionContext): void {
    context.subscriptions.push(vscode.workspace.registerTextDocumentContentProvider(SCHEME, this), this.changed);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.pages.get(uri.toString()) ?? "";
  }

  /** Stores `markdown` under `name` and shows it rendered (the Markdown preview). */
  async show(name: string, markdown: string, toSide = false): Promise<vscode.Uri> {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${name.replace(/[^\w.-]+/g, "_")}.md` });
    this.pages.set(uri.toString(), markdown);
    this.changed.fire(uri);
    await vscode.commands.executeCommand(toSide ? "markdown.showPreviewToSide" : "markdown.showPreview", uri);
    return uri;
  }
}
