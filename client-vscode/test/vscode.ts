// A small in-memory fake of the `vscode` API: just what the adapters touch, with spies the
// tests drive (quick picks, input boxes, messages, configuration, trust).
import { vi } from "vitest";

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>) => {
    this.listeners.push(listener);
    return { dispose: () => { this.listeners = this.listeners.filter((l) => l !== listener); } };
  };
  fire(e: T): void { for (const l of [...this.listeners]) l(e); }
  dispose(): void { this.listeners = []; }
}

export class Uri {
  private constructor(readonly scheme: string, readonly fsPath: string) {}
  get path(): string { return this.fsPath; }
  static file(p: string): Uri { return new Uri("file", p); }
  static parse(s: string): Uri { return new Uri("file", decodeURIComponent(s.replace(/^file:\/\//, ""))); }
  static joinPath(base: Uri, ...parts: string[]): Uri { return new Uri(base.scheme, [base.fsPath, ...parts].join("/")); }
  static from(c: { scheme: string; path: string }): Uri { return new Uri(c.scheme, c.path); }
  toString(): string { return `${this.scheme}://${this.fsPath}`; }
}

export class ThemeIcon { constructor(readonly id: string, readonly color?: ThemeColor) {} }
export class ThemeColor { constructor(readonly id: string) {} }
export enum TreeItemCollapsibleState { None = 0, Collapsed = 1, Expanded = 2 }
export class TreeItem {
  id?: string; description?: string; tooltip?: string; contextValue?: string; iconPath?: ThemeIcon;
  command?: { command: string; title: string; arguments?: unknown[] };
  accessibilityInformation?: { label: string };
  constructor(readonly label: string, readonly collapsibleState: TreeItemCollapsibleState) {}
}
export enum ProgressLocation { SourceControl = 1, Window = 10, Notification = 15 }
export enum ConfigurationTarget { Global = 1, Workspace = 2, WorkspaceFolder = 3 }
export enum LanguageStatusSeverity { Information = 0, Warning = 1, Error = 2 }

export class CancellationTokenSource {
  private emitter = new EventEmitter<void>();
  token = { isCancellationRequested: false, onCancellationRequested: this.emitter.event };
  cancel(): void { this.token.isCancellationRequested = true; this.emitter.fire(); }
}

/** Settings of the fake workspace, by full key (`baton.workflow.runner`). */
export const settings: Record<string, unknown> = {};

function section(prefix: string) {
  const get = <T>(key: string, fallback?: T): T | undefined => {
    const full = `${prefix}.${key}`;
    return (full in settings ? settings[full] : fallback) as T | undefined;
  };
  const nested: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(settings)) {
    if (!k.startsWith(`${prefix}.`)) continue;
    const parts = k.slice(prefix.length + 1).split(".");
    let at = nested;
    for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
    at[parts[parts.length - 1]] = v;
  }
  return { ...nested, get, has: (k: string) => `${prefix}.${k}` in settings, update: vi.fn(async (k: string, v: unknown) => { settings[`${prefix}.${k}`] = v; }) };
}

export const workspace = {
  isTrusted: true,
  workspaceFolders: [{ uri: Uri.file("/ws"), name: "ws", index: 0 }] as { uri: Uri; name: string; index: number }[] | undefined,
  getConfiguration: vi.fn((prefix: string) => section(prefix)),
  onDidChangeConfiguration: new EventEmitter<unknown>().event,
  onDidGrantWorkspaceTrust: new EventEmitter<void>().event,
  onDidSaveTextDocument: new EventEmitter<unknown>().event,
  createFileSystemWatcher: vi.fn(() => ({
    onDidCreate: new EventEmitter<Uri>().event, onDidDelete: new EventEmitter<Uri>().event,
    onDidChange: new EventEmitter<Uri>().event, dispose: () => undefined,
  })),
  findFiles: vi.fn(async () => [] as Uri[]),
  /** Content providers by scheme (read-only virtual documents). */
  providers: new Map<string, { provideTextDocumentContent(u: Uri): string }>(),
  registerTextDocumentContentProvider: vi.fn((scheme: string, p: { provideTextDocumentContent(u: Uri): string }) => {
    workspace.providers.set(scheme, p);
    return { dispose: () => workspace.providers.delete(scheme) };
  }),
  /** Paths that exist for `fs.stat`. */
  existing: new Set<string>(),
  fs: { stat: vi.fn(async (u: Uri) => {
    if (!workspace.existing.has(u.fsPath)) throw new Error(`ENOENT ${u.fsPath}`);
    return { type: 2 };
  }) },
  asRelativePath: (u: Uri | string) => (typeof u === "string" ? u : u.fsPath).replace(/^\/ws\//, ""),
  openTextDocument: vi.fn(async (arg: unknown) => ({ arg, lineCount: 0, lineAt: () => ({ text: "", range: {} }) })),
};

export const window = {
  showQuickPick: vi.fn(),
  showInputBox: vi.fn(),
  showInformationMessage: vi.fn(async (..._args: unknown[]) => undefined as string | undefined),
  showWarningMessage: vi.fn(async (..._args: unknown[]) => undefined as string | undefined),
  showErrorMessage: vi.fn(async (..._args: unknown[]) => undefined as string | undefined),
  showTextDocument: vi.fn(async () => undefined),
  showOpenDialog: vi.fn(async () => undefined),
  withProgress: vi.fn(async (_opts: unknown, task: (p: { report: (v: unknown) => void }, t: unknown) => Promise<unknown>) => {
    const source = new CancellationTokenSource();
    window.lastProgress = { report: vi.fn(), cancel: () => source.cancel() };
    return task(window.lastProgress, source.token);
  }),
  lastProgress: undefined as undefined | { report: ReturnType<typeof vi.fn>; cancel: () => void },
  createOutputChannel: vi.fn((_name: string, _opts?: { log: true }) => ({
    appendLine: vi.fn(), append: vi.fn(), show: vi.fn(), dispose: vi.fn(),
    trace: vi.fn(), debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn(),
  })),
  activeTextEditor: undefined,
};

export const commands = {
  executeCommand: vi.fn(async () => undefined),
  registerCommand: vi.fn((id: string, fn: (...a: unknown[]) => unknown) => {
    commands.registered.set(id, fn);
    return { dispose: () => commands.registered.delete(id) };
  }),
  registered: new Map<string, (...a: unknown[]) => unknown>(),
};

export const extensions = {
  getExtension: vi.fn((_id: string) => undefined as unknown),
};

export const languages = { createLanguageStatusItem: vi.fn() };

/** Puts the fake back to its defaults between tests. */
export function reset(): void {
  for (const k of Object.keys(settings)) delete settings[k];
  workspace.isTrusted = true;
  workspace.workspaceFolders = [{ uri: Uri.file("/ws"), name: "ws", index: 0 }];
  workspace.existing.clear();
  workspace.providers.clear();
  commands.registered.clear();
  vi.clearAllMocks();
  window.showQuickPick.mockReset();
  window.showInputBox.mockReset();
  extensions.getExtension.mockImplementation(() => undefined);
}
