// Language client lifecycle: find the interpreter, check baton_lsp, start/restart (coalesced),
// and the language status item. The decisions are in interpreter.ts and settings.ts.
import { execFile } from "node:child_process";
import { accessSync, existsSync, constants as fsConstants, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import * as vscode from "vscode";
import {
  CancellationToken, CloseAction, DidChangeConfigurationNotification, DocumentDiagnosticRequest, DynamicFeature, ErrorAction,
  ExecuteCommandRequest, LanguageClient, LanguageClientOptions, ServerOptions, State, StaticFeature,
  TransportKind,
} from "vscode-languageclient/node";
import {
  Diagnosis, ProbeResult, ServerCommand, diagnose, discoverServers, fallbackToBundle, findOnPath, probeArgs,
  tryNext, withLogLevel,
} from "./interpreter";
import { initializationOptions, needsRestart, serverSettings } from "./settings";
import { lensTitle } from "./status";
import { WorkflowChanged, parseWorkflowChanged } from "./workflows";

export type ServerState = "stopped" | "starting" | "running" | "failed";


/** The files the server checks: markdown under `.claude/`, `.opencode/` and `specs/`,
 * checkpoints and other data files, state scripts, Claude Code's project settings, the
 * configuration and OpenCode's. */
export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "markdown", pattern: "**/.claude/**/*.md" },
  { scheme: "file", language: "markdown", pattern: "**/.opencode/**/*.md" },
  { scheme: "file", pattern: "**/{opencode.json,opencode.jsonc}" },
  { scheme: "file", pattern: "**/.mcp.json" },
  { scheme: "file", language: "markdown", pattern: "**/{CLAUDE,CLAUDE.local}.md" },
  { scheme: "file", pattern: "**/.claude-plugin/{plugin,marketplace}.json" },
  { scheme: "file", language: "markdown", pattern: "**/specs/**/*.md" },
  { scheme: "file", pattern: "**/.claude/data/**/*.{json,jsonl}" },
  { scheme: "file", pattern: "**/.claude/{settings.json,settings.local.json}" },
  { scheme: "file", pattern: "**/.claude/tmp/**" },
  { scheme: "file", pattern: "**/.claude/baton.toml" },
];

export class BatonLanguageClient extends LanguageClient {
  public override registerFeature(feature: StaticFeature | DynamicFeature<unknown>): void {
    const method = (feature as Partial<DynamicFeature<unknown>>).registrationType?.method;
    // Palette commands wrap the server's `baton.server.*` commands under their own ids and code
    // lenses invoke the client's `baton.showGraph`; auto-registering every server command as a
    // VS Code command would clash with that id and fail again on each restart.
    if (method === ExecuteCommandRequest.method) return;
    // Push diagnostics, not pull: the server indexes and publishes the whole tree either way,
    // and with pull the client's document and workspace reports for a file that was opened and
    // closed diverged from `baton check` (counted twice, or lost after a restart).
    if (method === DocumentDiagnosticRequest.method) return;
    super.registerFeature(feature);
  }
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, fsConstants.X_OK);
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

export function which(name: string): string | undefined {
  if (process.platform === "win32") {
    const exts = (process.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";").filter(Boolean);
    return findOnPath(name, process.env.PATH, (p) => { try { return statSync(p).isFile(); } catch { return false; } }, ";", ["", ...exts]);
  }
  return findOnPath(name, process.env.PATH, isExecutable);
}

function run(command: string, args: string[], cwd: string, timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    // argv only: paths with spaces or quotes reach the program unchanged, no shell involved.
    execFile(command, args, { cwd, timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024, windowsHide: true },
      (error, stdout, stderr) => {
        const err = error as (NodeJS.ErrnoException & { killed?: boolean }) | null;
        if (err && typeof err.code === "string") {
          resolve({ error: err.code, exitCode: null, stdout, stderr });
        } else if (err?.killed) {
          resolve({ error: "timed out", exitCode: null, stdout, stderr });
        } else {
          resolve({ exitCode: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
        }
      });
  });
}

interface PythonEnvironmentsApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { id: string; path: string };
    resolveEnvironment(env: { id: string; path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

export class BatonServer implements vscode.Disposable {
  client: LanguageClient | undefined;
  state: ServerState = "stopped";
  version: string | undefined;
  rules: number | undefined;
  command: ServerCommand | undefined;
  lastError: string | undefined;
  /** A log channel (levels, timestamps, the user's log-level filter), not a plain one. */
  readonly output: vscode.LogOutputChannel;
  private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly workflowEmitter = new vscode.EventEmitter<WorkflowChanged>();
  readonly onWorkflowChanged = this.workflowEmitter.event;
  private readonly disposables: vscode.Disposable[] = [];
  private restartTimer: NodeJS.Timeout | undefined;
  private queue: Promise<void> = Promise.resolve();
  private pythonWatch: vscode.Disposable | undefined;

  constructor(private readonly context: vscode.ExtensionContext, private readonly clientVersion: string) {
    this.output = vscode.window.createOutputChannel("Baton", { log: true });
    this.disposables.push(this.output, this.stateEmitter, this.workflowEmitter);
    this.disposables.push(vscode.workspace.onDidChangeConfiguration((e) => {
      if (needsRestart((s) => e.affectsConfiguration(s))) this.scheduleRestart("settings changed");
      else if (e.affectsConfiguration("baton")) this.pushSettings();
    }));
    // Trust changes what the server may launch and which settings apply: start afresh.
    this.disposables.push(vscode.workspace.onDidGrantWorkspaceTrust(() => this.scheduleRestart("workspace trusted", 0)));
  }

  private setState(state: ServerState, error?: string): void {
    this.state = state;
    this.lastError = error;
    void vscode.commands.executeCommand("setContext", "baton.serverState", state);
    this.stateEmitter.fire(state);
  }

  private rawSettings(scope?: vscode.Uri): Record<string, unknown> {
    // A JSON round trip turns the WorkspaceConfiguration proxy into plain data.
    return JSON.parse(JSON.stringify(vscode.workspace.getConfiguration("baton", scope))) as Record<string, unknown>;
  }

  private async pythonExtensionInterpreter(): Promise<string | undefined> {
    const ext = vscode.extensions.getExtension<PythonEnvironmentsApi>("ms-python.python");
    if (!ext) return undefined;
    try {
      const api = ext.isActive ? ext.exports : await ext.activate();
      const envs = api?.environments;
      if (!envs) return undefined;
      if (!this.pythonWatch) {
        this.pythonWatch = envs.onDidChangeActiveEnvironmentPath(() => {
          // Only when that environment is the one in use (no explicit setting wins over it).
          const cfg = vscode.workspace.getConfiguration("baton");
          if (!cfg.get<string>("interpreter") && !cfg.get<string>("server.path")) this.scheduleRestart("Python environment changed");
        });
        this.disposables.push(this.pythonWatch);
      }
      const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
      const env = await envs.resolveEnvironment(envs.getActiveEnvironmentPath(folder));
      return env?.executable.uri?.fsPath;
    } catch (err) {
      this.output.warn(`Python extension: could not read the active environment: ${String(err)}`);
      return undefined;
    }
  }

  /** The bundled server's bootstrap, when this .vsix carries bundled/libs (a platform build). */
  bundle(): string | undefined {
    const bootstrap = join(this.context.extensionPath, "bundled", "tool", "baton_bootstrap.py");
    return existsSync(bootstrap) && existsSync(join(this.context.extensionPath, "bundled", "libs", "common")) ? bootstrap : undefined;
  }

  async discover(): Promise<ServerCommand[]> {
    const cfg = vscode.workspace.getConfiguration("baton");
    const serverPath = cfg.get<string | null>("server.path");
    const interpreter = cfg.get<string | null>("interpreter");
    const needExtension = !serverPath && !interpreter;
    return discoverServers({
      serverPath, interpreter,
      pythonExtension: needExtension ? await this.pythonExtensionInterpreter() : undefined,
      workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
      home: homedir(), env: process.env, which, bundle: this.bundle(),
    });
  }

  /** Start unless running; failures become an actionable notification, not an exception. */
  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  restart(reason: string): Promise<void> {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    return this.enqueue(async () => {
      this.output.info(`Restarting the server: ${reason}`);
      await this.doStop();
      await this.doStart();
    });
  }

  /** Several setting writes in a row (a settings sync, the interpreter picker) restart once. */
  scheduleRestart(reason: string, delayMs = 1000): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => void this.restart(reason), delayMs);
  }

  private enqueue(job: () => Promise<void>): Promise<void> {
    const next = this.queue.then(job, job);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async doStart(): Promise<void> {
    if (this.client) return;
    this.setState("starting");
    const candidates = await this.discover();
    let cmd = candidates[0];
    this.command = cmd;
    if (!cmd) {
      const message = this.bundle()
        ? "Baton: no Python found. Install Python 3.11 or newer (python3 on PATH) or select an interpreter: the extension brings its own server."
        : "Baton: no Python found. Set `baton.interpreter` to a Python ≥ 3.11 with baton-lsp installed.";
      this.setState("failed", message);
      void this.offerFix(message);
      return;
    }
    let probe: ProbeResult | undefined;
    let diagnosis: Diagnosis | undefined;
    let firstFailure: Diagnosis | undefined;
    for (const candidate of candidates) {
      cmd = candidate;
      this.output.info(`Server: ${cmd.command} ${withLogLevel(cmd, vscode.workspace.getConfiguration("baton").get<string>("logLevel")).join(" ")} (from ${cmd.source})`);
      // The bundled server's first start compiles its bytecode: a longer limit.
      probe = await run(cmd.command, probeArgs(cmd), this.context.extensionPath, cmd.bundled ? 60_000 : 30_000);
      diagnosis = diagnose(cmd, probe, this.clientVersion);
      const fallback = fallbackToBundle(cmd, diagnosis, this.bundle());
      if (fallback) {
        this.output.info(`baton-lsp is not installed for ${cmd.command}: using the bundled server with it.`);
        cmd = fallback;
        probe = await run(cmd.command, probeArgs(cmd), this.context.extensionPath, 60_000);
        diagnosis = diagnose(cmd, probe, this.clientVersion);
      }
      if (diagnosis.ok || !tryNext(cmd, diagnosis)) break;
      this.output.warn(`${diagnosis.message} Trying the next Python.`);
      firstFailure ??= diagnosis;
    }
    this.command = cmd;
    if (!diagnosis?.ok) {
      // Every Python skipped: the first (the preferred one) says why; else the one that broke.
      const failure = diagnosis && cmd && !tryNext(cmd, diagnosis) ? diagnosis : firstFailure ?? diagnosis;
      const message = failure && !failure.ok ? failure.message : "Baton: the server could not start.";
      if (probe?.stderr.trim()) this.output.warn(probe.stderr.trim());
      this.setState("failed", message);
      void this.offerFix(message);
      return;
    }
    this.version = diagnosis.version;
    const trusted = vscode.workspace.isTrusted;
    const serverOptions: ServerOptions = {
      // The extension's own directory as cwd: `python -m` puts the cwd on sys.path, and a
      // workspace (possibly untrusted) must not be able to shadow baton_lsp.
      command: cmd.command, args: withLogLevel(cmd, vscode.workspace.getConfiguration("baton").get<string>("logLevel")),
      transport: TransportKind.stdio,
      options: { cwd: this.context.extensionPath, env: { ...process.env, PYTHONUNBUFFERED: "1" } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      outputChannel: this.output,
      initializationOptions: initializationOptions(this.rawSettings(), trusted),
      // A crash is reported once, by us, with a Restart button — no silent restart loops and
      // no second message from the client library.
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => ({ action: CloseAction.DoNotRestart, handled: true }),
      },
      middleware: {
        provideCodeLenses: async (document, token, next) => {
          const lenses = await next(document, token);
          for (const lens of lenses ?? []) if (lens.command) lens.command.title = lensTitle(lens.command.title);
          return lenses;
        },
        workspace: {
          // The server pulls `baton`; answer with the same filtered view as the init options.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return params.items.map((item, i) => item.section === "baton"
              ? serverSettings(this.rawSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined), vscode.workspace.isTrusted)
              : result[i]);
          },
        },
      },
    };
    const client = new BatonLanguageClient("baton", "Baton", serverOptions, clientOptions);
    this.client = client;
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client && this.state === "running") {
        this.client = undefined;
        this.setState("failed", "Baton: the language server stopped.");
        void vscode.window.showErrorMessage("Baton: the language server stopped.", "Restart Server", "Show Output")
          .then((pick) => this.handleFixPick(pick));
      }
    });
    // Registered before start so no early notification is dropped.
    client.onNotification("baton/workflowChanged", (params: unknown) => {
      const parsed = parseWorkflowChanged(params);
      if (parsed) this.workflowEmitter.fire(parsed);
    });
    try {
      await client.start();
    } catch (err) {
      this.client = undefined;
      await client.dispose(2000).catch(() => undefined); // a half-started process must not linger
      const message = `Baton: the language server did not start: ${err instanceof Error ? err.message : String(err)}`;
      this.setState("failed", message);
      void this.offerFix(message);
      return;
    }
    try {
      const info = await this.request<{ rules?: number; baton?: string }>("baton.server.debugInfo", {});
      this.rules = typeof info?.rules === "number" ? info.rules : undefined;
    } catch (err) {
      this.output.warn(`debugInfo failed: ${String(err)}`);
    }
    this.setState("running");
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.warn(`Stopping the server: ${String(err)}`);
      }
    }
    this.setState("stopped");
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  private pushSettings(): void {
    const client = this.client;
    if (!client || this.state !== "running") return;
    void client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { baton: serverSettings(this.rawSettings(), vscode.workspace.isTrusted) },
    }).catch((err: unknown) => this.output.error(`didChangeConfiguration failed: ${String(err)}`));
  }

  /** Only actions that can succeed: no pip install (baton-lsp is not on PyPI; the bundled
   * server needs none), but another interpreter, the install guide, or the output. */
  private async offerFix(message: string): Promise<void> {
    this.output.error(message);
    const pick = await vscode.window.showErrorMessage(message, "Select Interpreter", "Open Install Guide", "Show Output");
    await this.handleFixPick(pick);
  }

  private async handleFixPick(pick: string | undefined): Promise<void> {
    if (pick === "Select Interpreter") await this.selectInterpreter();
    // The extension's own README (in the .vsix, so it opens offline): its Requirements section.
    else if (pick === "Open Install Guide") {
      await vscode.commands.executeCommand("markdown.showPreview", vscode.Uri.file(join(this.context.extensionPath, "README.md")));
    }
    else if (pick === "Show Output") this.output.show(true);
    else if (pick === "Restart Server") await this.restart("requested");
  }

  async selectInterpreter(): Promise<void> {
    if (vscode.extensions.getExtension("ms-python.python")) {
      // Its picker changes the active environment, which restarts us through the API event.
      await vscode.commands.executeCommand("python.setInterpreter");
      return;
    }
    const picked = await vscode.window.showOpenDialog({
      canSelectFiles: true, canSelectFolders: false, canSelectMany: false,
      title: "Python interpreter (3.11 or newer) for the Baton server", openLabel: "Use this interpreter",
    });
    if (picked?.[0]) {
      await vscode.workspace.getConfiguration("baton").update("interpreter", picked[0].fsPath, vscode.ConfigurationTarget.Global);
    }
  }

  /** A server command with one object argument; the token cancels the request. */
  request<T>(command: string, arg: Record<string, unknown>, token?: CancellationToken): Promise<T> {
    return this.requestArgs<T>(command, [arg], token);
  }

  requestArgs<T>(command: string, args: unknown[], token?: CancellationToken): Promise<T> {
    const client = this.client;
    if (!client || !(this.state === "running" || this.state === "starting")) {
      return Promise.reject(new Error("the Baton language server is not running (Baton: Restart Server)"));
    }
    return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token) as Promise<T>;
  }

  dispose(): void {
    if (this.restartTimer) clearTimeout(this.restartTimer);
    for (const d of this.disposables) d.dispose();
  }
}
