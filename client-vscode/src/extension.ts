// Entry point: wires the server, the Workflows view, the commands and the status item.
import * as vscode from "vscode";
import { WorkflowCommands } from "./commands";
import { GraphPanel } from "./graphPanel";
import { offerMarkdownValidateFix } from "./markdownValidate";
import { BatonServer, DOCUMENT_SELECTOR } from "./server";
import { statusView } from "./status";
import { WorkflowsProvider } from "./treeView";

let server: BatonServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const version = String((context.extension.packageJSON as { version?: string }).version ?? "0.0.0");
  server = new BatonServer(context, version);
  const tree = new WorkflowsProvider(server);
  context.subscriptions.push(server, tree);
  const view = vscode.window.createTreeView("baton.workflows", { treeDataProvider: tree, showCollapseAll: true });
  context.subscriptions.push(view);

  const commands = new WorkflowCommands(server, tree);
  commands.register(context);
  const s = server;
  context.subscriptions.push(
    vscode.commands.registerCommand("baton.restartServer", () => s.restart("Baton: Restart Server")),
    vscode.commands.registerCommand("baton.showOutput", () => s.output.show(true)),
    vscode.commands.registerCommand("baton.showGraph", async (arg: unknown) => {
      try {
        await GraphPanel.show(context, s, arg);
      } catch (err) {
        void vscode.window.showErrorMessage(`Baton: ${err instanceof Error ? err.message : String(err)}`);
      }
    }),
  );

  const item = vscode.languages.createLanguageStatusItem("baton.status", DOCUMENT_SELECTOR);
  item.name = "Baton";
  item.command = { command: "baton.showOutput", title: "Show Output" };
  const update = () => {
    const v = statusView(s.state, { version: s.version, rules: s.rules, error: s.lastError, source: s.command?.source, rows: tree.rows });
    item.text = v.text;
    item.detail = v.detail;
    item.busy = v.busy;
    item.severity = v.severity === "error" ? vscode.LanguageStatusSeverity.Error
      : v.severity === "warning" ? vscode.LanguageStatusSeverity.Warning : vscode.LanguageStatusSeverity.Information;
    view.message = s.state === "failed" ? s.lastError : undefined;
  };
  context.subscriptions.push(item, s.onDidChangeState(update), tree.onDidChangeRows(update));
  update();
  // VS Code's Markdown validation would flag Baton's markers: offer the workspace setting.
  const offer = () => void offerMarkdownValidateFix(context.workspaceState).catch(() => undefined);
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration("markdown.validate")) offer();
  }));
  offer();

  await s.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
