// The Workflows view: rows from the server, rebuilt on `baton/workflowChanged` and on
// checkpoint file changes (runs started from a terminal), debounced — never polled.
import * as vscode from "vscode";
import type { BatonServer } from "./server";
import { TreeNode, buildTree, iconFor } from "./treeModel";
import type { WorkflowRow } from "./workflows";

export class WorkflowsProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private roots: TreeNode[] = [];
  rows: WorkflowRow[] = [];
  private readonly changed = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly rowsChanged = new vscode.EventEmitter<WorkflowRow[]>();
  readonly onDidChangeRows = this.rowsChanged.event;
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private again = false;
  private signature = "";
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly server: BatonServer) {
    this.disposables.push(this.changed, this.rowsChanged);
    this.disposables.push(server.onWorkflowChanged(() => this.schedule()));
    this.disposables.push(server.onDidChangeState((s) => {
      if (s === "running") this.schedule(0);
    }));
    const watcher = vscode.workspace.createFileSystemWatcher("**/.claude/data/checkpoints/**/*.json");
    this.disposables.push(watcher, watcher.onDidCreate(() => this.schedule(500)), watcher.onDidDelete(() => this.schedule(500)));
  }

  /** Coalesces bursts (a wave of parallel steps) into one list request. */
  schedule(delayMs = 200): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => { this.timer = undefined; void this.refresh(); }, delayMs);
  }

  refresh(): Promise<void> {
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    this.inFlight = (async () => {
      do {
        this.again = false;
        try {
          if (this.server.state !== "running") return;
          const rows = await this.server.request<WorkflowRow[]>("baton.server.workflow.list", {});
          this.rows = Array.isArray(rows) ? rows : [];
        } catch (err) {
          this.server.output.warn(`Workflows view: ${err instanceof Error ? err.message : String(err)}`);
        }
        const roots = buildTree(this.rows, Date.now());
        const signature = JSON.stringify(roots, (key, value: unknown) => (key === "row" ? undefined : value));
        this.rowsChanged.fire(this.rows);
        // Re-render only on a visible change: a refresh makes VS Code drop the elements behind
        // its item handles, and a context-menu command racing it would get no argument.
        if (signature === this.signature) continue;
        this.signature = signature;
        this.roots = roots;
        void vscode.commands.executeCommand("setContext", "baton.hasWorkflows", this.rows.length > 0);
        this.changed.fire(undefined);
      } while (this.again);
    })().finally(() => { this.inFlight = undefined; });
    return this.inFlight;
  }

  getChildren(element?: TreeNode): TreeNode[] {
    return element ? element.children : this.roots;
  }

  getParent(): undefined {
    return undefined;
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    // A workflow row is expandable from its first appearance: VS Code keeps the state it first
    // saw for an id, and a run starts before its first state exists.
    const state = node.children.length === 0 && node.kind !== "workflow"
      ? vscode.TreeItemCollapsibleState.None
      : node.expanded ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed;
    const item = new vscode.TreeItem(node.label, state);
    // The id carries the status so a workflow that fails or finishes re-applies its default
    // expansion (VS Code keeps the user's expansion per id).
    item.id = `${node.id}#${node.status}`;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.contextValue = node.contextValue;
    const icon = iconFor(node.status);
    item.iconPath = new vscode.ThemeIcon(icon.id, icon.color ? new vscode.ThemeColor(icon.color) : undefined);
    item.accessibilityInformation = { label: `${node.kind} ${node.label}: ${node.description}` };
    if (node.open) {
      item.command = { command: "vscode.open", title: "Open Artifact", arguments: [vscode.Uri.file(node.open)] };
    }
    return item;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const d of this.disposables) d.dispose();
  }
}
