// Show Plan Graph: the server's Mermaid graph in a webview, phases coloured by the live state
// of the newest workflow that runs the plan. Mermaid is bundled in the .vsix (no CDN).
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import * as vscode from "vscode";
import { colourGraph } from "./graph";
import type { BatonServer } from "./server";
import { TreeNode, phaseStatuses } from "./treeModel";
import type { WorkflowsProvider } from "./treeView";

interface GraphResult { mermaid: string; waves: string[][]; cycles: string[][]; critical_path: string[] }

/** A plan from a code lens (URI string), the explorer (Uri), the Workflows view (node) or the
 * active editor. */
export function planFromArg(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) return arg;
  if (typeof arg === "string") return arg.startsWith("file:") ? vscode.Uri.parse(arg) : vscode.Uri.file(arg);
  const node = arg as Partial<TreeNode> | undefined;
  if (node?.row?.plan) return vscode.Uri.file(node.row.plan);
  return undefined;
}

function samePath(a: string, b: string): boolean {
  return path.resolve(a) === path.resolve(b);
}

export class GraphPanel {
  private static current: GraphPanel | undefined;
  private readonly panel: vscode.WebviewPanel;
  private readonly disposables: vscode.Disposable[] = [];
  private graph: GraphResult | undefined;

  static async show(context: vscode.ExtensionContext, server: BatonServer, tree: WorkflowsProvider, arg: unknown): Promise<void> {
    let plan = planFromArg(arg);
    const active = vscode.window.activeTextEditor?.document.uri;
    if (!plan && active && /\/plans\/[^/]+\.md$/.test(active.path)) plan = active;
    if (!plan) {
      const plans = await vscode.workspace.findFiles("**/specs/**/plans/*.md", "**/node_modules/**", 500);
      const picked = await vscode.window.showQuickPick(plans.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })),
        { placeHolder: "Plan to show" });
      if (!picked) return;
      plan = picked.uri;
    }
    if (GraphPanel.current) {
      GraphPanel.current.panel.reveal(vscode.ViewColumn.Beside);
      await GraphPanel.current.load(plan);
      return;
    }
    GraphPanel.current = new GraphPanel(context, server, tree);
    await GraphPanel.current.load(plan);
  }

  private plan: vscode.Uri | undefined;

  private constructor(context: vscode.ExtensionContext, private readonly server: BatonServer,
    private readonly tree: WorkflowsProvider) {
    const media = vscode.Uri.joinPath(context.extensionUri, "media");
    this.panel = vscode.window.createWebviewPanel("baton.graph", "Plan Graph", vscode.ViewColumn.Beside, {
      enableScripts: true, localResourceRoots: [media], retainContextWhenHidden: false,
    });
    const webview = this.panel.webview;
    const nonce = randomBytes(16).toString("base64");
    const mermaidJs = webview.asWebviewUri(vscode.Uri.joinPath(media, "mermaid.min.js"));
    const graphJs = webview.asWebviewUri(vscode.Uri.joinPath(media, "graph.js"));
    const css = webview.asWebviewUri(vscode.Uri.joinPath(media, "graph.css"));
    webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${webview.cspSource} data:; style-src ${webview.cspSource} 'unsafe-inline'; font-src ${webview.cspSource}; script-src 'nonce-${nonce}';">
<meta name="viewport" content="width=device-width, initial-scale=1.0"><link rel="stylesheet" href="${css}"><title>Plan Graph</title></head>
<body><header><h1 id="title">Plan graph</h1><p id="summary"></p>
<ul class="legend"><li class="done">done</li><li class="running">running</li><li class="failed">failed</li><li class="pending">pending</li></ul></header>
<div id="graph" role="img" aria-label="plan dependency graph"></div><pre id="error" hidden></pre>
<script nonce="${nonce}" src="${mermaidJs}"></script><script nonce="${nonce}" src="${graphJs}"></script></body></html>`;
    this.disposables.push(
      this.panel.onDidDispose(() => this.dispose()),
      tree.onDidChangeRows(() => this.render()),
      vscode.workspace.onDidSaveTextDocument((doc) => {
        if (this.plan && doc.uri.toString() === this.plan.toString()) void this.load(this.plan);
      }),
      webview.onDidReceiveMessage((msg: { type?: string; phase?: string }) => {
        if (msg?.type === "ready") this.render();
      }),
    );
  }

  private async load(plan: vscode.Uri): Promise<void> {
    this.plan = plan;
    this.panel.title = `Plan Graph: ${path.basename(plan.fsPath)}`;
    try {
      this.graph = await this.server.requestArgs<GraphResult>("baton.showGraph", [plan.toString()]);
    } catch (err) {
      this.graph = undefined;
      void this.panel.webview.postMessage({ type: "error", message: err instanceof Error ? err.message : String(err) });
      return;
    }
    if (this.tree.rows.length === 0) await this.tree.refresh();
    this.render();
  }

  private render(): void {
    if (!this.graph || !this.plan) return;
    const statuses = phaseStatuses(this.tree.rows, this.plan.fsPath, samePath);
    const waves = this.graph.waves ?? [];
    const summary = [`${waves.length} wave${waves.length === 1 ? "" : "s"}`,
      this.graph.critical_path?.length ? `critical path: ${this.graph.critical_path.join(" → ")}` : "",
      this.graph.cycles?.length ? `${this.graph.cycles.length} dependency cycle(s): ${this.graph.cycles.map((c) => c.join(" → ")).join("; ")}` : "",
      Object.keys(statuses).length ? "colours: the newest workflow of this plan" : "no workflow has run this plan yet"].filter(Boolean).join(" · ");
    void this.panel.webview.postMessage({
      type: "render", title: vscode.workspace.asRelativePath(this.plan), summary,
      mermaid: colourGraph(this.graph.mermaid, statuses),
    });
  }

  private dispose(): void {
    GraphPanel.current = undefined;
    for (const d of this.disposables) d.dispose();
  }
}
