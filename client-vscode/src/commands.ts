// Palette and tree commands: they ask the few questions a command needs, then call the
// server's `baton.server.*` command with one validated object.
import * as vscode from "vscode";
import { ReadOnlyDocs, errorMarkdown, statusMarkdown } from "./documents";
import type { BatonServer } from "./server";
import { which } from "./server";
import type { TreeNode } from "./treeModel";
import type { WorkflowsProvider } from "./treeView";
import {
  ResumePreview, SCOPES, WorkflowChanged, WorkflowRow, describePreview, endedSince, failureReason, idArgs,
  isFinished, isResumable, isRunning, eventText, progressText, runnerChoices, startArgs,
} from "./workflows";

/** Server commands the server's own code actions and code lenses carry that the client passes
 * on as they are (open a file at a line, a checkpoint). The client library's automatic registration of server commands is
 * off (see BatonLanguageClient), so without these the editor answers "command not found". */
export const FORWARDED = ["baton.server.open", "baton.server.checkpoint.open"];

/** Server commands of code actions and lenses that the client runs itself, through the same
 * path as the palette and the tree (a modal preview, progress, a completion message): the
 * server's own versions ask with a toast that hides in the notification centre, and
 * `resume` asks nothing at all. Other LSP clients still get the server's versions. */
export const RESUME_PREVIEW = "baton.server.workflow.resumeWithPreview";
export const RETRY = "baton.server.workflow.resume";
export const RESUME_FROM = "baton.server.workflow.resumeFromCheckpoint";
/** Checkpoints offered by *Resume from an earlier checkpoint…* (the server's choice too). */
const MAX_CHOICES = 8;

interface HistoryRow { n: number; ok: boolean; state?: string | null; status?: string | null; event?: string | null; at?: string | null }

const UNTRUSTED = "Baton: starting or resuming a workflow runs agents and commands from this workspace's configuration, so it needs a trusted workspace.";

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Rows, workflow nodes and ids all identify a workflow (tree menus pass the node). */
function rowOf(arg: unknown, rows: WorkflowRow[]): WorkflowRow | undefined {
  if (!arg) return undefined;
  if (typeof arg === "string") return rows.find((r) => r.workflow_id === arg);
  const node = arg as Partial<TreeNode> & Partial<WorkflowRow>;
  if (node.row) return node.row;
  if (typeof node.workflow_id === "string") return node as WorkflowRow;
  // A server command's argument (code actions, lenses): {id, workspace?}.
  const cmd = arg as { id?: unknown; workspace?: unknown };
  if (typeof cmd.id === "string") {
    return rows.find((r) => r.workflow_id === cmd.id && (typeof cmd.workspace !== "string" || !r.workspace || r.workspace === cmd.workspace));
  }
  return undefined;
}

/** The checkpoint a server command's argument names (`at`), if any. */
function atOf(arg: unknown): number | undefined {
  const at = (arg as { at?: unknown } | undefined)?.at;
  return typeof at === "number" && Number.isInteger(at) ? at : undefined;
}

/** How a followed workflow ended: its `finished` event, or what the Workflows view shows once
 * the server lost track of it (a restart; a server that stopped). */
interface Ending {
  readonly status: string;
  readonly message?: string | null;
  readonly state?: string | null;
}

export class WorkflowCommands {
  /** Final `finished` events by workflow id, kept so a run that ends before we start
   * waiting for it is not missed. */
  private readonly finished = new Map<string, Ending>();
  private readonly waiters = new Map<string, ((e: Ending) => void)[]>();
  private readonly progress = new Map<string, (message: string) => void>();
  private readonly docs = new ReadOnlyDocs();

  constructor(private readonly server: BatonServer, private readonly tree: WorkflowsProvider) {
    server.onWorkflowChanged((change) => {
      const id = change.workflow_id;
      if (!id) return;
      const message = progressText(change);
      if (message) this.progress.get(id)?.(message);
      this.logEvent(id, change.event);
      if (change.event.event === "finished") {
        const ending: Ending = { status: change.event.status, message: change.event.message, state: change.event.state };
        this.finished.set(id, ending);
        // Only the latest few matter (a run that ended just before we waited for it).
        for (const old of [...this.finished.keys()].slice(0, Math.max(0, this.finished.size - 50))) this.finished.delete(old);
        for (const resolve of this.waiters.get(id) ?? []) resolve(ending);
        this.waiters.delete(id);
      }
    });
  }

  /** Workflows in the output channel: transitions and step ends at info, a failed step or
   * run at warning/error, everything else at debug (shown when the level asks for it). */
  private logEvent(id: string, event: WorkflowChanged["event"]): void {
    const e = event as { event: string; status?: string; state?: string | null; message?: string | null };
    const text = `${id}: ${eventText(event) ?? e.event}${e.message ? ` (${e.message})` : ""}`;
    if (e.event === "finished") {
      const line = `${id}: finished ${e.status ?? "?"}${e.state ? ` in ${e.state}` : ""}${e.message ? `: ${e.message}` : ""}`;
      if (e.status === "complete") this.server.output.info(line); else this.server.output.error(line);
    } else if (e.event === "step" && e.status === "failed") this.server.output.warn(text);
    else if (e.event === "transition" || e.event === "step") this.server.output.info(text);
    else this.server.output.debug(text);
  }

  register(context: vscode.ExtensionContext): void {
    const reg = (id: string, fn: (...args: unknown[]) => unknown) =>
      context.subscriptions.push(vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          await fn(...args);
        } catch (err) {
          void vscode.window.showErrorMessage(`Baton: ${errorText(err)}`);
        }
      }));
    this.docs.register(context);
    reg("baton.startWorkflow", () => this.start());
    reg("baton.resumeWorkflow", (arg) => this.resume(arg));
    reg("baton.cancelWorkflow", (arg) => this.cancel(arg));
    reg("baton.rerunWorkflow", (arg) => this.rerun(arg));
    reg("baton.showWorkflowStatus", (arg) => this.status(arg));
    reg("baton.validateWorkspace", () => this.validate());
    reg("baton.refreshWorkflows", () => this.tree.refresh());
    reg("baton.openCheckpoint", (arg) => this.openCheckpoint(arg));
    reg("baton.openPlan", (arg) => this.openPlan(arg));
    reg("baton.openError", (arg) => this.openError(arg));
    reg("baton.openAgentLog", (arg) => this.openAgentLog(arg));
    reg(RESUME_PREVIEW, (arg) => this.resume(arg));
    reg(RETRY, (arg) => this.resume(arg, "Retry"));
    reg(RESUME_FROM, (arg) => this.resumeFrom(arg));
    for (const id of FORWARDED) reg(id, (...args) => this.server.requestArgs(id, args));
  }

  private async rows(): Promise<WorkflowRow[]> {
    await this.tree.refresh();
    return this.tree.rows;
  }

  private async pick(arg: unknown, filter: (r: WorkflowRow) => boolean, placeHolder: string, none: string): Promise<WorkflowRow | undefined> {
    const named = typeof arg === "string" || typeof (arg as { id?: unknown } | undefined)?.id === "string";
    const given = rowOf(arg, this.tree.rows) ?? (named ? rowOf(arg, await this.rows()) : undefined);
    if (given) return given;
    if (named) throw new Error(`no workflow ${typeof arg === "string" ? arg : String((arg as { id: string }).id)} in the open workspaces.`);
    const candidates = (await this.rows()).filter(filter);
    if (candidates.length === 0) {
      void vscode.window.showInformationMessage(`Baton: ${none}`);
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(candidates.map((r) => ({
      label: r.description || r.workflow_id,
      description: `${r.workflow_id} · ${r.running ? r.text ?? `running · ${r.state ?? ""}` : r.status}`,
      detail: r.status === "complete" || r.running ? `${r.scope ?? ""} · ${r.updated_at ?? ""}` : failureReason(r),
      row: r,
    })), { placeHolder, matchOnDescription: true, matchOnDetail: true });
    return picked?.row;
  }

  async start(): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage(UNTRUSTED, "Manage Workspace Trust").then((p) => {
        if (p) void vscode.commands.executeCommand("workbench.trust.manage");
      });
      return;
    }
    const workspace = await this.pickWorkspace();
    if (workspace === null) return;
    const cfg = vscode.workspace.getConfiguration("baton", workspace ? vscode.Uri.file(workspace) : undefined);
    const defaultScope = cfg.get<string>("workflow.defaultScope") ?? "full-implementation";
    const scopeItems = SCOPES.map((s) => ({ label: s.label, description: s.id, detail: s.detail, scope: s, picked: s.id === defaultScope }));
    scopeItems.sort((a, b) => (a.scope.id === defaultScope ? -1 : b.scope.id === defaultScope ? 1 : 0));
    const scope = await vscode.window.showQuickPick(scopeItems, { title: "Baton: Start Workflow (1/3)", placeHolder: "Scope of the workflow" });
    if (!scope) return;
    let plan: string | undefined;
    if (scope.scope.needsPlan) {
      const plans = await vscode.workspace.findFiles("**/.claude/specs/*/plans/*.md", "**/node_modules/**", 200);
      const pickedPlan = await vscode.window.showQuickPick(
        plans.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })),
        { title: "Baton: Start Workflow", placeHolder: "Plan to work from" });
      if (!pickedPlan) return;
      plan = pickedPlan.uri.fsPath;
    }
    const description = await vscode.window.showInputBox({
      title: "Baton: Start Workflow (2/3)", prompt: "What should the agents do?",
      placeHolder: "e.g. Add rate limiting to the login endpoint", ignoreFocusOut: true,
      validateInput: (v) => (v.trim() ? undefined : "A description is required"),
    });
    if (description === undefined) return;
    const runners = runnerChoices(which, cfg.get<string | null>("workflow.runner"));
    const runner = await vscode.window.showQuickPick(
      runners.map((r) => ({ label: r.label, detail: r.detail, id: r.id })),
      { title: "Baton: Start Workflow (3/3)", placeHolder: "Agent runner (installed agent CLIs, or the offline script agents)" });
    if (!runner) return;
    const args = startArgs({ description, scope: scope.scope.id, runner: runner.id, plan, workspace });
    await this.runFollowed(`Baton: ${description.trim()}`, "baton.server.workflow.start", args, undefined, description.trim());
  }

  /** The folder to run in when several open folders have a `.claude/` directory: undefined
   * lets the server take the only one, null means the user dismissed the pick. */
  private async pickWorkspace(): Promise<string | undefined | null> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length < 2) return undefined;
    const withClaude: vscode.WorkspaceFolder[] = [];
    for (const f of folders) {
      try {
        await vscode.workspace.fs.stat(vscode.Uri.joinPath(f.uri, ".claude"));
        withClaude.push(f);
      } catch { /* not a Baton workspace */ }
    }
    if (withClaude.length < 2) return withClaude[0]?.uri.fsPath;
    const picked = await vscode.window.showQuickPick(withClaude.map((f) => ({ label: f.name, description: f.uri.fsPath, folder: f })),
      { title: "Baton: Start Workflow", placeHolder: "Workspace folder to run the workflow in" });
    return picked ? picked.folder.uri.fsPath : null;
  }

  /** Resume (palette, tree, the code actions' *Resume workflow* and *Retry failed phase*, the
   * plan's lens): the server's preview in a modal, then the run under progress. */
  async resume(arg?: unknown, verb: "Resume" | "Retry" = "Resume"): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage(UNTRUSTED);
      return;
    }
    const row = await this.pick(arg, isResumable, "Workflow to resume", "no failed, cancelled or interrupted workflow to resume.");
    if (!row) return;
    const at = atOf(arg);
    const target = at === undefined ? idArgs(row) : { ...idArgs(row), at };
    const preview = await this.server.request<ResumePreview>("baton.server.workflow.previewResume", target);
    const text = describePreview(preview, verb, row.description || row.workflow_id);
    if (text.blocked) {
      void vscode.window.showWarningMessage(`Baton: ${row.description || row.workflow_id} is still running.`);
      return;
    }
    const choice = await vscode.window.showInformationMessage(text.message, { modal: true, detail: text.detail }, text.action);
    if (choice !== text.action) return;
    const args: Record<string, unknown> = { ...target };
    if (text.force) args.force = true;
    if (text.trust) args.trust = true;
    await this.runFollowed(`Baton: ${verb.toLowerCase()} ${row.description || row.workflow_id}`, "baton.server.workflow.resume", args,
      row.checkpoint ?? -1, row.description ?? undefined);
  }

  /** GitHub Actions' *Re-run*: a new run of a finished workflow with its recorded request and
   * pinned settings (the server reads them from the checkpoint), followed like a start. */
  async rerun(arg?: unknown): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage(UNTRUSTED);
      return;
    }
    const row = await this.pick(arg, isFinished, "Workflow to re-run", "no finished workflow to re-run.");
    if (!row) return;
    const name = row.description || row.workflow_id;
    const choice = await vscode.window.showInformationMessage(`Re-run "${name}"?`,
      { modal: true, detail: `A new workflow with the same description, scope${row.plan ? ", plan" : ""}, runner and settings as ${row.workflow_id}.` },
      "Re-run");
    if (choice !== "Re-run") return;
    await this.runFollowed(`Baton: re-run ${name}`, "baton.server.workflow.rerun", idArgs(row), undefined, row.description ?? undefined);
  }

  /** *Resume from an earlier checkpoint…*: the newest sound checkpoints in a quick pick, then
   * the same preview, dialog and progress as any resume. */
  async resumeFrom(arg?: unknown): Promise<void> {
    if (!vscode.workspace.isTrusted) {
      void vscode.window.showWarningMessage(UNTRUSTED);
      return;
    }
    const row = await this.pick(arg, isResumable, "Workflow to resume", "no failed, cancelled or interrupted workflow to resume.");
    if (!row) return;
    const history = await this.server.request<HistoryRow[]>("baton.server.workflow.checkpoints", idArgs(row));
    const sound = history.filter((h) => h.ok).slice(-MAX_CHOICES).reverse();
    if (sound.length === 0) throw new Error(`"${row.description || row.workflow_id}" has no usable checkpoint.`);
    const picked = await vscode.window.showQuickPick(sound.map((h) => ({
      label: `#${h.n} ${h.state ?? ""}`, description: h.event ?? "", detail: [h.status, h.at].filter(Boolean).join(" · "), n: h.n,
    })), { title: `Baton: resume "${row.description || row.workflow_id}" from`, placeHolder: "Checkpoint to resume from (newest first)" });
    if (!picked) return;
    await this.resume({ ...idArgs(row), at: picked.n });
  }

  /** Start/resume under a cancellable notification that lasts until the workflow finishes;
   * cancelling it cancels the workflow (which stays resumable). */
  private async runFollowed(title: string, command: string, args: Record<string, unknown>, baseline?: number | null, description?: string): Promise<void> {
    const outcome = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      async (progress, token) => {
        progress.report({ message: "starting…" });
        // The end of an earlier run of the workflow being resumed is not this run's end.
        if (typeof args.id === "string") this.finished.delete(args.id);
        const started = await this.server.request<{ workflow_id: string | null; pid: number }>(command, args, token);
        const id = started?.workflow_id;
        if (!id) throw new Error("the workflow did not start (see Baton: Show Output)");
        this.progress.set(id, (message) => progress.report({ message }));
        this.tree.schedule(0);
        const cancelled = token.onCancellationRequested(() => {
          progress.report({ message: "cancelling…" });
          void this.server.request("baton.server.workflow.cancel", { id }).catch((err: unknown) =>
            void vscode.window.showErrorMessage(`Baton: cancel failed: ${errorText(err)}`));
        });
        try {
          return { id, event: await this.waitFinished(id, baseline) };
        } finally {
          cancelled.dispose();
          this.progress.delete(id);
        }
      });
    await this.tree.refresh();
    const row = this.tree.rows.find((r) => r.workflow_id === outcome.id);
    const status = String(outcome.event.status ?? row?.status ?? "finished");
    const id = outcome.id;
    // Messages name the workflow by its description (the id is in the view's tooltip).
    const name = `"${row?.description || description || id}"`;
    const act = (p: string | undefined) => {
      if (p === "Resume") void vscode.commands.executeCommand("baton.resumeWorkflow", id);
      else if (p === "Open Error") void this.openError(id);
      else if (p === "Show Status") void this.status(id);
      else if (p === "Show Output") this.server.output.show(true);
    };
    const reason = row && row.status === status ? failureReason(row)
      : `${status}${outcome.event.message ? `: ${String(outcome.event.message)}` : ""}`;
    // Decided from the event, not the row: the row may still say "running" while the engine exits.
    if (status === "complete") {
      void vscode.window.showInformationMessage(`Baton: ${name} complete.`, "Show Status").then(act);
    } else if (status === "cancelled") {
      void vscode.window.showWarningMessage(`Baton: ${name} ${reason}`, "Resume", "Show Status").then(act);
    } else if (status === "failed" || status === "interrupted") {
      void vscode.window.showErrorMessage(`Baton: ${name} ${reason}`, "Resume", "Open Error").then(act);
    } else {
      void vscode.window.showWarningMessage(`Baton: lost track of ${name}: ${String(outcome.event.message ?? status)}`, "Show Output").then(act);
    }
  }

  /** Resolves on the `finished` notification, or — when the server lost track of the run
   * (restarted while it ran) — on a refreshed row that shows it ended. */
  private async waitFinished(id: string, baseline?: number | null): Promise<Ending> {
    const early = this.finished.get(id);
    this.finished.delete(id);
    if (early) return early;
    return new Promise<Ending>((resolve) => {
      const done = (e: Ending) => { sub.dispose(); down.dispose(); this.finished.delete(id); resolve(e); };
      // A restart keeps following (the rows tell); a server that is gone cannot.
      const down = this.server.onDidChangeState((state) => {
        if (state === "failed") done({ status: "unknown", message: "the language server stopped; the workflow keeps running on its own (see the Workflows view)" });
      });
      const sub = this.tree.onDidChangeRows((rows) => {
        const row = rows.find((r) => r.workflow_id === id);
        if (row && endedSince(row, baseline)) done({ status: row.status, state: row.state ?? undefined });
      });
      this.waiters.set(id, [...(this.waiters.get(id) ?? []), done]);
    });
  }

  async cancel(arg?: unknown): Promise<void> {
    const row = await this.pick(arg, isRunning, "Workflow to cancel", "no workflow is running.");
    if (!row) return;
    const result = await this.server.request<{ code: number; message: string }>("baton.server.workflow.cancel", idArgs(row));
    const name = row.description || row.workflow_id;
    // One notification per cancel: a run this window follows says how it ended itself; the
    // engine's message ends with a terminal instruction, and Resume is a button here.
    if (result.code === 0) {
      if (!this.progress.has(row.workflow_id)) {
        void vscode.window.showInformationMessage(`Baton: cancelled "${name}"; it can be resumed.`, "Resume").then((p) => {
          if (p === "Resume") void vscode.commands.executeCommand("baton.resumeWorkflow", row.workflow_id);
        });
      }
    } else void vscode.window.showErrorMessage(`Baton: cancel "${name}" failed: ${result.message}`);
    this.tree.schedule(0);
  }

  async status(arg?: unknown): Promise<void> {
    const row = await this.pick(arg, () => true, "Workflow to show", "no workflows in this workspace yet.");
    if (!row) return;
    const info = await this.server.request<Record<string, unknown>>("baton.server.workflow.status", idArgs(row));
    await this.docs.show(`status-${row.workflow_id}`, statusMarkdown(info));
  }

  async validate(): Promise<void> {
    const totals = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Baton: validating the workspace", cancellable: true },
      (_p, token) => this.server.request<{ files: number; errors: number; warnings: number; information: number; hints: number }>(
        "baton.server.validateWorkspace", {}, token));
    const msg = `Baton: ${totals.files} files checked: ${totals.errors} errors, ${totals.warnings} warnings, ${totals.information} information, ${totals.hints} hints.`;
    const pick = await vscode.window.showInformationMessage(msg, "Show Problems");
    if (pick) await vscode.commands.executeCommand("workbench.actions.view.problems");
  }

  private async required(arg: unknown): Promise<WorkflowRow | undefined> {
    return this.pick(arg, () => true, "Workflow", "no workflows in this workspace yet.");
  }

  async openCheckpoint(arg?: unknown): Promise<void> {
    const row = await this.required(arg);
    if (!row) return;
    if (!row.checkpoint_path) throw new Error(`${row.workflow_id} has no checkpoint yet.`);
    await vscode.window.showTextDocument(vscode.Uri.file(row.checkpoint_path));
  }

  async openPlan(arg?: unknown): Promise<void> {
    const row = await this.required(arg);
    if (!row) return;
    if (!row.plan) throw new Error(`${row.workflow_id} has no plan yet.`);
    await vscode.window.showTextDocument(vscode.Uri.file(row.plan));
  }

  /** A step's agent log (its last attempt), from the step's menu in the Workflows view. The
   * server resolves the path, inside the workspace. */
  async openAgentLog(arg?: unknown): Promise<void> {
    const node = arg as Partial<TreeNode> | undefined;
    if (!node?.row || !node.step) throw new Error("Open Agent Log needs a step of the Workflows view.");
    const log = await this.server.request<{ path: string; attempt: number }>("baton.server.step.log",
      { ...idArgs(node.row), step: node.step });
    await vscode.window.showTextDocument(vscode.Uri.file(log.path), { preview: true });
  }

  /** The workflow's last record in `.claude/data/logs/errors.jsonl`, at its line and rendered
   * beside it, else its failure rendered. */
  async openError(arg?: unknown): Promise<void> {
    const row = await this.required(arg);
    if (!row) return;
    if (row.workspace) {
      const log = vscode.Uri.joinPath(vscode.Uri.file(row.workspace), ".claude", "data", "logs", "errors.jsonl");
      try {
        const doc = await vscode.workspace.openTextDocument(log);
        let line = -1;
        for (let i = doc.lineCount - 1; i >= 0; i--) {
          if (doc.lineAt(i).text.includes(row.workflow_id)) { line = i; break; }
        }
        if (line >= 0) {
          const range = doc.lineAt(line).range;
          await vscode.window.showTextDocument(doc, { selection: range });
          let record: Record<string, unknown>;
          try {
            record = JSON.parse(doc.lineAt(line).text) as Record<string, unknown>;
          } catch {
            return; // not JSON: the line itself is all there is to show
          }
          await this.docs.show(`error-${row.workflow_id}-L${line + 1}`, errorMarkdown(record, log.fsPath, line), true);
          return;
        }
      } catch { /* no log yet: show the failure record instead */ }
    }
    await this.docs.show(`failure-${row.workflow_id}`, statusMarkdown({ ...row }));
  }
}
