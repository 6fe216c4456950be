// Show Plan Graph: the server's Mermaid graph in a webview, phases coloured as the server says
// (the live run's state, else the plan's own markers), asked again on every
// `baton/workflowChanged`. Mermaid is bundled in the .vsix (no CDN).
import { randomBytes } from "node:crypto";
import * as path from "node:path";
import * as vscode from "vscode";
import { type GraphResult, colourGraph, graphSummary } from "./graph";
import type { BatonServer } from "./server";
import type { TreeNode } from "./treeModel";

/** A plan from a code lens (URI string), the explorer (Uri), the Workflows view (node) or the
 * active editor. */
export function planFromArg(arg: unknown): vscode.Uri | undefined {
  if (arg instanceof vscode.Uri) return arg;
  if (typeof arg === "string") return arg.startsWith("file:") ? vscode.Uri.parse(arg) : vscode.Uri.file(arg);
  const node = arg as Partial<TreeNode> | undefined;
  if (node?.row?.plan) return vscode.Uri.file(node.row.plan);
  return undefined;
}

export class GraphPanel {
  private static current: GraphPanel | undefined;
  private readonly panel: vscode.WebviewPanel;
  private readonly disposables: vscode.Disposable[] = [];
  private graph: GraphResult | undefined;

  static async show(context: vscode.ExtensionContext, server: BatonServer, arg: unknown): Promise<void> {
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
    GraphPanel.current = new GraphPanel(context, server);
    await GraphPanel.current.load(plan);
  }

  private plan: vscode.Uri | undefined;
  private timer: NodeJS.Timeout | undefined;

  private constructor(context: vscode.ExtensionContext, private readonly server: BatonServer) {
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
      // A run moved: ask the server again (coalesced), it holds the one state of the run.
      server.onWorkflowChanged(() => {
        if (this.timer) clearTimeout(this.timer);
        this.timer = setTimeout(() => { this.timer = undefined; if (this.plan) void this.load(this.plan); }, 200);
      }),
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
    this.render();
  }

  private render(): void {
    if (!this.graph || !this.plan) return;
    void this.panel.webview.postMessage({
      type: "render", title: vscode.workspace.asRelativePath(this.plan), summary: graphSummary(this.graph),
      mermaid: colourGraph(this.graph.mermaid, this.graph.phases ?? {}),
    });
  }

  private dispose(): void {
    GraphPanel.current = undefined;
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}
