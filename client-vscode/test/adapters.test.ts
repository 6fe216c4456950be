// The vscode adapters against the fake API: what the user is asked, what reaches the server.
import { beforeEach, describe, expect, it, vi } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as vscode from "./vscode";
import rowsJson from "./fixtures/rows.json";
import previewJson from "./fixtures/preview.json";
import type { WorkflowChanged, WorkflowRow } from "../src/workflows";
import { buildTree } from "../src/treeModel";

vi.mock("vscode-languageclient/node", () => {
  class LanguageClient {
    registered: string[] = [];
    registerFeature(feature: { registrationType?: { method: string } }): void {
      this.registered.push(feature.registrationType?.method ?? "static");
    }
  }
  return {
    LanguageClient, State: { Stopped: 1, Starting: 3, Running: 2 }, TransportKind: { stdio: 0 },
    ExecuteCommandRequest: { method: "workspace/executeCommand", type: {} },
    DocumentDiagnosticRequest: { method: "textDocument/diagnostic", type: {} },
    DidChangeConfigurationNotification: { type: {} },
  };
});

const { WorkflowCommands } = await import("../src/commands");
const { WorkflowsProvider } = await import("../src/treeView");
const { BatonServer, BatonLanguageClient } = await import("../src/server");

const rows = rowsJson as WorkflowRow[];
const failed = rows.find((r) => r.status === "failed")!;

/** A server double: records requests, answers from a table, fires notifications. */
function fakeServer(answers: Record<string, (arg: Record<string, unknown>) => unknown>) {
  const workflow = new vscode.EventEmitter<WorkflowChanged>();
  const state = new vscode.EventEmitter<string>();
  const calls: [string, Record<string, unknown>][] = [];
  return {
    state: "running",
    output: { appendLine: vi.fn(), debug: vi.fn(), info: vi.fn(), warn: vi.fn(), error: vi.fn(), show: vi.fn() },
    onWorkflowChanged: workflow.event,
    onDidChangeState: state.event,
    calls,
    fireWorkflow: (c: WorkflowChanged) => workflow.fire(c),
    fireState: (s: string) => state.fire(s),
    request: vi.fn(async (command: string, arg: Record<string, unknown>) => {
      calls.push([command, arg]);
      const answer = answers[command];
      if (!answer) throw new Error(`unexpected ${command}`);
      return answer(arg);
    }),
    requestArgs: vi.fn(async (command: string, args: unknown[]) => {
      calls.push([command, args[0] as Record<string, unknown>]);
      const answer = answers[command];
      if (!answer) throw new Error(`unexpected ${command}`);
      return answer(args[0] as Record<string, unknown>);
    }),
  };
}

function setup(answers: Record<string, (arg: Record<string, unknown>) => unknown>) {
  const server = fakeServer({ "baton.server.workflow.list": () => rows, ...answers });
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const tree = new WorkflowsProvider(server as any);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const commands = new WorkflowCommands(server as any, tree);
  commands.register({ subscriptions: [] } as never);
  return { server, tree, run: (id: string, ...args: unknown[]) => vscode.commands.registered.get(id)!(...args) };
}

beforeEach(() => vscode.reset());

describe("Baton: Start Workflow", () => {
  it("asks scope, description and runner, then starts and reports completion", async () => {
    const { server, run } = setup({
      "baton.server.workflow.start": () => {
        // The run ends while the request is still answering: the event must not be lost.
        queueMicrotask(() => server.fireWorkflow({ workflow_id: "w9", event: { event: "finished", status: "complete" } }));
        return { workflow_id: "w9", pid: 1 };
      },
    });
    vscode.window.showQuickPick
      .mockImplementationOnce(async (items: { scope: { id: string } }[]) => items.find((i) => i.scope.id === "research-and-plan"))
      .mockImplementationOnce(async (items: { id: string }[]) => {
        expect(items.map((i) => i.id)).toContain("script");
        return items.find((i) => i.id === "script");
      });
    vscode.window.showInputBox.mockResolvedValueOnce("  plan the login flow ");
    await run("baton.startWorkflow");
    expect(server.calls.find(([c]) => c === "baton.server.workflow.start")?.[1])
      .toEqual({ description: "plan the login flow", scope: "research-and-plan", runner: "script" });
    expect(vscode.window.withProgress.mock.calls[0][0]).toMatchObject({ cancellable: true, location: vscode.ProgressLocation.Notification, title: "Baton: plan the login flow" });
    expect(vscode.window.showInformationMessage).toHaveBeenCalledWith('Baton: "plan the login flow" complete.', "Show Status");
  });

  it("asks which folder when several open folders have .claude/", async () => {
    vscode.workspace.workspaceFolders = ["/a", "/b", "/c"].map((p, index) => ({ uri: vscode.Uri.file(p), name: p.slice(1), index }));
    vscode.workspace.existing.add("/a/.claude").add("/c/.claude");
    const { server, run } = setup({ "baton.server.workflow.start": () => {
      queueMicrotask(() => server.fireWorkflow({ workflow_id: "w1", event: { event: "finished", status: "complete" } }));
      return { workflow_id: "w1", pid: 1 };
    } });
    vscode.window.showQuickPick
      .mockImplementationOnce(async (items: { label: string }[]) => {
        expect(items.map((i) => i.label)).toEqual(["a", "c"]);
        return items[1];
      })
      .mockImplementationOnce(async (items: { scope: { id: string } }[]) => items[0])
      .mockImplementationOnce(async (items: { id: string }[]) => items.find((i) => i.id === "script"));
    vscode.window.showInputBox.mockResolvedValueOnce("x");
    await run("baton.startWorkflow");
    expect(server.calls.find(([c]) => c === "baton.server.workflow.start")?.[1]).toMatchObject({ workspace: "/c" });
  });

  it("stops quietly when the user dismisses a question", async () => {
    const { server, run } = setup({});
    vscode.window.showQuickPick.mockResolvedValueOnce(undefined);
    await run("baton.startWorkflow");
    expect(server.calls.filter(([c]) => c !== "baton.server.workflow.list")).toEqual([]);
  });

  it("refuses in an untrusted workspace, with the reason", async () => {
    vscode.workspace.isTrusted = false;
    const { server, run } = setup({});
    await run("baton.startWorkflow");
    expect(vscode.window.showQuickPick).not.toHaveBeenCalled();
    expect(server.request).not.toHaveBeenCalled();
    expect(String(vscode.window.showWarningMessage.mock.calls[0][0])).toMatch(/needs a trusted workspace/);
  });

  it("cancelling the notification cancels the workflow", async () => {
    const { server, run } = setup({
      "baton.server.workflow.start": () => ({ workflow_id: "w7", pid: 1 }),
      "baton.server.workflow.cancel": (arg) => {
        server.fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "cancelled" } });
        return { workflow_id: arg.id, code: 0, message: "cancelled" };
      },
    });
    vscode.window.showQuickPick
      .mockImplementationOnce(async (items: { scope: { id: string } }[]) => items[0])
      .mockImplementationOnce(async (items: { id: string }[]) => items.find((i) => i.id === "script"));
    vscode.window.showInputBox.mockResolvedValueOnce("x");
    const done = run("baton.startWorkflow");
    await vi.waitFor(() => expect(server.calls.some(([c]) => c === "baton.server.workflow.start")).toBe(true));
    await vi.waitFor(() => expect(vscode.window.lastProgress).toBeDefined());
    vscode.window.lastProgress!.cancel();
    await done;
    expect(server.calls.find(([c]) => c === "baton.server.workflow.cancel")?.[1]).toEqual({ id: "w7" });
    expect(vscode.window.showWarningMessage).toHaveBeenCalledWith('Baton: "x" cancelled', "Resume", "Show Status");
  });
});

describe("Baton: Cancel Workflow", () => {
  const cancelMessage = "workflow w7 cancelled; resume with `baton resume w7`"; // the engine's words

  it("says it once, without a terminal instruction, for a run this window follows", async () => {
    const { server, run } = setup({
      "baton.server.workflow.start": () => ({ workflow_id: "w7", pid: 1 }),
      "baton.server.workflow.cancel": (arg) => {
        queueMicrotask(() => server.fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "cancelled", state: "research" } }));
        return { workflow_id: arg.id, code: 0, message: cancelMessage };
      },
    });
    vscode.window.showQuickPick
      .mockImplementationOnce(async (items: { scope: { id: string } }[]) => items[0])
      .mockImplementationOnce(async (items: { id: string }[]) => items.find((i) => i.id === "script"));
    vscode.window.showInputBox.mockResolvedValueOnce("x");
    const done = run("baton.startWorkflow");
    await vi.waitFor(() => expect(vscode.window.lastProgress).toBeDefined());
    await vi.waitFor(() => expect(server.calls.some(([c]) => c === "baton.server.workflow.start")).toBe(true));
    await new Promise((r) => setTimeout(r, 0));
    await run("baton.cancelWorkflow", { workflow_id: "w7", status: "in_progress", running: true, description: "x" });
    await done;
    const shown = [vscode.window.showInformationMessage, vscode.window.showWarningMessage, vscode.window.showErrorMessage]
      .flatMap((m) => m.mock.calls.map((c) => String(c[0])));
    expect(shown.filter((m) => /cancel/.test(m))).toEqual(['Baton: "x" cancelled']);
    expect(shown.some((m) => m.includes("baton resume"))).toBe(false);
  });

  it("says it once, by description, for a run started elsewhere", async () => {
    const { run } = setup({ "baton.server.workflow.cancel": (arg) => ({ workflow_id: arg.id, code: 0, message: cancelMessage }) });
    await run("baton.cancelWorkflow", { workflow_id: "w7", status: "in_progress", running: true, description: "add a pause" });
    expect(vscode.window.showInformationMessage.mock.calls.map((c) => c[0])).toEqual(['Baton: cancelled "add a pause"; it can be resumed.']);
    expect(vscode.window.showInformationMessage.mock.calls[0][1]).toBe("Resume");
  });
});

describe("following a run", () => {
  function startWith(answers: Record<string, (arg: Record<string, unknown>) => unknown>) {
    const env = setup(answers);
    vscode.window.showQuickPick
      .mockImplementationOnce(async (items: { scope: { id: string } }[]) => items[0])
      .mockImplementationOnce(async (items: { id: string }[]) => items.find((i) => i.id === "script"));
    vscode.window.showInputBox.mockResolvedValueOnce("x");
    return env;
  }

  it("stops waiting, and says so, when the language server dies mid-run", async () => {
    const { server, run } = startWith({ "baton.server.workflow.start": () => ({ workflow_id: "w5", pid: 1 }) });
    const done = run("baton.startWorkflow");
    await vi.waitFor(() => expect(vscode.window.lastProgress).toBeDefined());
    await vi.waitFor(() => expect(server.calls.some(([c]) => c === "baton.server.workflow.start")).toBe(true));
    server.state = "failed";
    server.fireState("failed");
    await done;
    expect(String(vscode.window.showWarningMessage.mock.calls[0][0])).toMatch(/^Baton: lost track of "x": the language server stopped/);
  });

  it("reports a failure with Resume and Open Error", async () => {
    const { server, run } = startWith({
      "baton.server.workflow.start": () => {
        queueMicrotask(() => server.fireWorkflow({ workflow_id: failed.workflow_id, event: { event: "finished", status: "failed" } }));
        return { workflow_id: failed.workflow_id, pid: 1 };
      },
    });
    await run("baton.startWorkflow");
    const [message, ...buttons] = vscode.window.showErrorMessage.mock.calls[0] as string[];
    expect(message).toMatch(/^Baton: "add a farewell" failed in implement: wave 2: HARD BARRIER FAILED/);
    expect(buttons).toEqual(["Resume", "Open Error"]);
  });

  it("does not take an unconsumed end of an earlier run for the resumed run's end", async () => {
    let finish!: () => void;
    const { server, run } = setup({
      "baton.server.workflow.previewResume": () => previewJson,
      "baton.server.workflow.resume": (arg) => {
        finish = () => server.fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "complete" } });
        return { workflow_id: arg.id, pid: 2 };
      },
    });
    // The failure of a run this window did not start (a code action, another client).
    server.fireWorkflow({ workflow_id: failed.workflow_id, event: { event: "finished", status: "failed" } });
    vscode.window.showInformationMessage.mockResolvedValueOnce("Resume");
    const done = run("baton.resumeWorkflow", failed);
    await vi.waitFor(() => expect(finish).toBeDefined());
    await new Promise((r) => setTimeout(r, 20));
    expect(vscode.window.showErrorMessage).not.toHaveBeenCalled();
    finish();
    await done;
    expect(vscode.window.showInformationMessage).toHaveBeenLastCalledWith('Baton: "add a farewell" complete.', "Show Status");
  });
});

describe("Baton: Resume Workflow", () => {
  it("shows the server's preview and resumes only when confirmed", async () => {
    const { server, run, tree } = setup({
      "baton.server.workflow.previewResume": () => previewJson,
      "baton.server.workflow.resume": (arg) => {
        queueMicrotask(() => server.fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "complete" } }));
        return { workflow_id: arg.id, pid: 2 };
      },
    });
    await tree.refresh();
    const node = tree.getChildren().find((n) => n.row.workflow_id === failed.workflow_id)!;
    vscode.window.showInformationMessage.mockResolvedValueOnce(undefined); // "Cancel" on the modal
    await run("baton.resumeWorkflow", node);
    expect(server.calls.some(([c]) => c === "baton.server.workflow.resume")).toBe(false);
    const [message, options] = vscode.window.showInformationMessage.mock.calls[0] as [string, { modal: boolean; detail: string }];
    expect(message).toBe('Resume "add a farewell" from implement?');
    expect(options.modal).toBe(true);
    expect(options.detail).toContain("implement.phase-2");

    vscode.window.showInformationMessage.mockResolvedValueOnce("Resume");
    await run("baton.resumeWorkflow", node);
    expect(server.calls.find(([c]) => c === "baton.server.workflow.resume")?.[1]).toEqual({ id: failed.workflow_id, workspace: undefined });
  });

  it("does not take the failure being resumed for the end of the resumed run", async () => {
    let tree!: InstanceType<typeof WorkflowsProvider>;
    const { server, run, tree: t } = setup({
      "baton.server.workflow.previewResume": () => previewJson,
      "baton.server.workflow.resume": (arg) => {
        // The view refreshes (still showing the old failed row) before the run reports its end.
        setTimeout(() => void tree.refresh().then(() =>
          server.fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "complete" } })), 0);
        return { workflow_id: arg.id, pid: 2 };
      },
    });
    tree = t;
    await tree.refresh();
    vscode.window.showInformationMessage.mockResolvedValueOnce("Resume");
    await run("baton.resumeWorkflow", failed.workflow_id);
    expect(vscode.window.showErrorMessage).not.toHaveBeenCalled();
    expect(vscode.window.showInformationMessage).toHaveBeenLastCalledWith('Baton: "add a farewell" complete.', "Show Status");
  });

  it("forces the resume only after the user confirmed the preview's problems", async () => {
    const { server, run } = setup({
      "baton.server.workflow.previewResume": () => ({ ...previewJson, problems: ["the plan changed since the run"] }),
      "baton.server.workflow.resume": (arg) => {
        queueMicrotask(() => server.fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "complete" } }));
        return { workflow_id: arg.id, pid: 2 };
      },
    });
    vscode.window.showInformationMessage.mockResolvedValueOnce("Resume Anyway");
    await run("baton.resumeWorkflow", failed);
    expect(vscode.window.showInformationMessage.mock.calls[0][2]).toBe("Resume Anyway");
    expect(server.calls.find(([c]) => c === "baton.server.workflow.resume")?.[1]).toEqual({ id: failed.workflow_id, workspace: undefined, force: true });
  });

  it("offers only resumable workflows in the quick pick, with the failure reason", async () => {
    const { run } = setup({});
    vscode.window.showQuickPick.mockResolvedValueOnce(undefined);
    await run("baton.resumeWorkflow");
    const items = vscode.window.showQuickPick.mock.calls[0][0] as { label: string; detail: string }[];
    expect(items.map((i) => i.label)).toEqual(["add a farewell"]);
    expect(items[0].detail).toMatch(/^failed in implement: wave 2: HARD BARRIER FAILED/);
  });
});

describe("commands carried by the server's code actions and lenses", () => {
  it("are VS Code commands that forward their arguments to the server as they are", async () => {
    const { server, run } = setup({
      "baton.server.open": () => ({ shown: true }),
      "baton.server.checkpoint.open": () => ({ shown: true }),
    });
    await run("baton.server.open", { path: "/ws/src/shared.py", line: 3 });
    await run("baton.server.checkpoint.open", { id: "w1", workspace: "/ws" });
    expect(server.calls).toEqual([
      ["baton.server.open", { path: "/ws/src/shared.py", line: 3 }],
      ["baton.server.checkpoint.open", { id: "w1", workspace: "/ws" }],
    ]);
    for (const id of ["baton.server.workflow.resume", "baton.server.workflow.resumeWithPreview",
      "baton.server.workflow.resumeFromCheckpoint"]) expect(vscode.commands.registered.has(id)).toBe(true);
    expect(vscode.commands.registered.has("baton.showGraph")).toBe(false); // the client's own
  });

  /** Answers for a resume that ends `complete` right after it starts. */
  function resuming(server: () => ReturnType<typeof fakeServer>) {
    return {
      "baton.server.workflow.previewResume": () => previewJson,
      "baton.server.workflow.resume": (arg: Record<string, unknown>) => {
        queueMicrotask(() => server().fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "complete" } }));
        return { workflow_id: arg.id, pid: 2 };
      },
    };
  }

  it("Resume workflow asks in a modal, runs under progress and says when it is done, as the palette does", async () => {
    let srv!: ReturnType<typeof fakeServer>;
    const { server, run } = setup(resuming(() => srv));
    srv = server;
    vscode.window.showInformationMessage.mockResolvedValueOnce("Resume");
    await run("baton.server.workflow.resumeWithPreview", { id: failed.workflow_id, workspace: "/ws" });
    // Never the server's own version, whose question is a toast that hides itself.
    expect(server.calls.map(([c]) => c)).not.toContain("baton.server.workflow.resumeWithPreview");
    const [message, options, action] = vscode.window.showInformationMessage.mock.calls[0] as [string, { modal: boolean; detail: string }, string];
    expect(message).toBe('Resume "add a farewell" from implement?');
    expect(options.modal).toBe(true);
    expect(options.detail).toContain("implement.phase-2");
    expect(action).toBe("Resume");
    expect(vscode.window.withProgress).toHaveBeenCalledWith(
      expect.objectContaining({ location: vscode.ProgressLocation.Notification, cancellable: true, title: "Baton: resume add a farewell" }),
      expect.any(Function));
    expect(server.calls.find(([c]) => c === "baton.server.workflow.resume")?.[1]).toEqual({ id: failed.workflow_id });
    expect(vscode.window.showInformationMessage).toHaveBeenLastCalledWith('Baton: "add a farewell" complete.', "Show Status");
  });

  it("Retry failed phase asks first, and starts nothing when declined", async () => {
    let srv!: ReturnType<typeof fakeServer>;
    const { server, run } = setup(resuming(() => srv));
    srv = server;
    vscode.window.showInformationMessage.mockResolvedValueOnce(undefined); // Cancel on the modal
    await run("baton.server.workflow.resume", { id: failed.workflow_id, workspace: "/ws" });
    expect(server.calls.map(([c]) => c)).not.toContain("baton.server.workflow.resume");
    const [message, options, action] = vscode.window.showInformationMessage.mock.calls[0] as [string, { modal: boolean; detail: string }, string];
    expect(message).toBe('Retry Phase 2 of "add a farewell" and continue?');
    expect(options.modal).toBe(true);
    expect(action).toBe("Retry");
    expect(vscode.window.withProgress).not.toHaveBeenCalled();

    vscode.window.showInformationMessage.mockResolvedValueOnce("Retry");
    await run("baton.server.workflow.resume", { id: failed.workflow_id, workspace: "/ws" });
    expect(vscode.window.withProgress).toHaveBeenCalledWith(
      expect.objectContaining({ cancellable: true, title: "Baton: retry add a farewell" }), expect.any(Function));
    expect(vscode.window.showInformationMessage).toHaveBeenLastCalledWith('Baton: "add a farewell" complete.', "Show Status");
  });

  it("Resume from an earlier checkpoint offers sound checkpoints, newest first, then resumes from the one picked as any resume does", async () => {
    let srv!: ReturnType<typeof fakeServer>;
    const { server, run } = setup({
      ...resuming(() => srv),
      "baton.server.workflow.checkpoints": () => [
        { n: 1, ok: true, state: "initialize", status: "in_progress", event: "start" },
        { n: 2, ok: false, state: null },
        { n: 3, ok: true, state: "research", status: "in_progress", event: "step research.1 done" },
        { n: 4, ok: true, state: "implement", status: "failed", event: "failed" },
      ],
    });
    srv = server;
    vscode.window.showQuickPick.mockImplementationOnce(async (items: { label: string; n: number }[]) => items.find((i) => i.n === 3));
    vscode.window.showInformationMessage.mockResolvedValueOnce("Resume");
    await run("baton.server.workflow.resumeFromCheckpoint", { id: failed.workflow_id, workspace: "/ws" });
    const items = vscode.window.showQuickPick.mock.calls[0][0] as { label: string }[];
    expect(items.map((i) => i.label)).toEqual(["#4 implement", "#3 research", "#1 initialize"]);
    expect(server.calls.map(([c]) => c)).not.toContain("baton.server.workflow.resumeFromCheckpoint");
    expect(server.calls.find(([c]) => c === "baton.server.workflow.previewResume")?.[1]).toEqual({ id: failed.workflow_id, at: 3 });
    expect((vscode.window.showInformationMessage.mock.calls[0][1] as { modal: boolean }).modal).toBe(true);
    expect(server.calls.find(([c]) => c === "baton.server.workflow.resume")?.[1]).toEqual({ id: failed.workflow_id, at: 3 });
    expect(vscode.window.showInformationMessage).toHaveBeenLastCalledWith('Baton: "add a farewell" complete.', "Show Status");
  });

  it("cancelling the progress of a code action's resume cancels the workflow", async () => {
    const { server, run } = setup({
      "baton.server.workflow.previewResume": () => previewJson,
      "baton.server.workflow.resume": (arg) => ({ workflow_id: arg.id, pid: 2 }),
      "baton.server.workflow.cancel": (arg) => {
        queueMicrotask(() => server.fireWorkflow({ workflow_id: String(arg.id), event: { event: "finished", status: "cancelled", state: "implement" } }));
        return { code: 0, message: "cancelled" };
      },
    });
    vscode.window.showInformationMessage.mockResolvedValueOnce("Resume");
    const done = run("baton.server.workflow.resumeWithPreview", { id: failed.workflow_id, workspace: "/ws" });
    await vi.waitFor(() => expect(server.calls.map(([c]) => c)).toContain("baton.server.workflow.resume"));
    await vi.waitFor(() => expect(vscode.window.lastProgress).toBeDefined());
    vscode.window.lastProgress!.cancel();
    await done;
    expect(server.calls.find(([c]) => c === "baton.server.workflow.cancel")?.[1]).toEqual({ id: failed.workflow_id });
  });

  it("says which workflow a stale code action names instead of asking for another", async () => {
    const { server, run } = setup({});
    await run("baton.server.workflow.resumeWithPreview", { id: "gone_1", workspace: "/ws" });
    expect(vscode.window.showQuickPick).not.toHaveBeenCalled();
    expect(server.calls.map(([c]) => c)).toEqual(["baton.server.workflow.list"]);
    expect(vscode.window.showErrorMessage).toHaveBeenCalledWith("Baton: no workflow gone_1 in the open workspaces.");
  });

  it("shows what the server refused instead of failing silently", async () => {
    const { run } = setup({ "baton.server.open": () => { throw new Error("baton.server.open: /x is outside the open workspaces"); } });
    await run("baton.server.open", { path: "/x" });
    expect(vscode.window.showErrorMessage).toHaveBeenCalledWith("Baton: baton.server.open: /x is outside the open workspaces");
  });
});

describe("Workflows view", () => {
  it("turns nodes into tree items with icons, menus and accessible labels", async () => {
    const { tree } = setup({});
    await tree.refresh();
    const [farewell] = tree.getChildren();
    const item = tree.getTreeItem(farewell) as unknown as vscode.TreeItem;
    expect(item.label).toBe("add a farewell");
    expect(item.contextValue).toBe("workflow:resumable:plan:error:finished");
    expect(item.collapsibleState).toBe(vscode.TreeItemCollapsibleState.Expanded);
    expect((item.iconPath as vscode.ThemeIcon).id).toBe("error");
    expect(item.accessibilityInformation?.label).toMatch(/^workflow add a farewell: failed in implement · /);
    const done = tree.getChildren(tree.getChildren(tree.getChildren()[1])[0])[0];
    const doneItem = tree.getTreeItem(done) as unknown as vscode.TreeItem;
    expect(doneItem.command?.command).toBe("vscode.open");
    const starting = tree.getTreeItem(buildTree([{ workflow_id: "w", running: true, status: "in_progress", steps: {} }], 0)[0]) as unknown as vscode.TreeItem;
    expect(starting.collapsibleState).toBe(vscode.TreeItemCollapsibleState.Expanded);
  });

  it("re-renders only when something visible changed", async () => {
    const { tree, server } = setup({});
    const fired = vi.fn();
    tree.onDidChangeTreeData(fired);
    await tree.refresh();
    await tree.refresh();
    expect(fired).toHaveBeenCalledTimes(1);
    server.request.mockImplementationOnce(async () => rows.map((r) => (r.status === "failed" ? { ...r, status: "cancelled" } : r)));
    await tree.refresh();
    expect(fired).toHaveBeenCalledTimes(2);
  });

  it("refreshes on server notifications, coalescing a burst into one list request", async () => {
    vi.useFakeTimers();
    try {
      const { server } = setup({});
      for (let i = 0; i < 5; i++) server.fireWorkflow({ workflow_id: "w", event: { event: "step", step: "research.1", state: "research", status: "running" } });
      await vi.advanceTimersByTimeAsync(500);
      expect(server.calls.filter(([c]) => c === "baton.server.workflow.list")).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("the language client", () => {
  it("registers neither server commands as VS Code commands nor pull diagnostics", () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const client = new (BatonLanguageClient as any)("baton", "Baton", {}, {});
    for (const method of ["workspace/executeCommand", "textDocument/diagnostic", "textDocument/hover", undefined]) {
      client.registerFeature(method ? { registrationType: { method } } : {});
    }
    expect(client.registered).toEqual(["textDocument/hover", "static"]);
  });
});

describe("interpreter discovery in the adapter", () => {
  const context = { extensionPath: "/ext", subscriptions: [] } as never;

  it("uses the Python extension's active environment when no setting names one", async () => {
    const resolveEnvironment = vi.fn(async () => ({ executable: { uri: vscode.Uri.file("/envs/a/bin/python") } }));
    vscode.extensions.getExtension.mockImplementation((id: string) => id === "ms-python.python" ? {
      isActive: true,
      exports: { environments: {
        getActiveEnvironmentPath: () => ({ id: "a", path: "/envs/a" }), resolveEnvironment,
        onDidChangeActiveEnvironmentPath: new vscode.EventEmitter<unknown>().event,
      } },
    } : undefined);
    const server = new BatonServer(context, "0.1.0");
    expect((await server.discover())[0]).toMatchObject({ command: "/envs/a/bin/python", source: "Python extension" });
    vscode.settings["baton.interpreter"] = "/venv/bin/python";
    expect(await server.discover()).toHaveLength(1);
    expect((await server.discover())[0]).toMatchObject({ command: "/venv/bin/python", source: "baton.interpreter" });
    vscode.settings["baton.server.path"] = "/opt/bin/baton";
    expect((await server.discover())[0]).toMatchObject({ command: "/opt/bin/baton", args: ["lsp"], source: "baton.server.path" });
    server.dispose();
  });

  it("runs the bundled server when the installed extension carries one (a platform .vsix)", async () => {
    vscode.extensions.getExtension.mockImplementation(() => undefined);
    const ext = mkdtempSync(join(tmpdir(), "baton-ext-"));
    try {
      const bare = new BatonServer({ extensionPath: ext, subscriptions: [] } as never, "0.1.0");
      expect(bare.bundle()).toBeUndefined();
      expect((await bare.discover()).every((c) => !c.bundled)).toBe(true);
      bare.dispose();
      mkdirSync(join(ext, "bundled", "tool"), { recursive: true });
      mkdirSync(join(ext, "bundled", "libs", "common"), { recursive: true });
      writeFileSync(join(ext, "bundled", "tool", "baton_bootstrap.py"), "");
      const server = new BatonServer({ extensionPath: ext, subscriptions: [] } as never, "0.1.0");
      const bootstrap = join(ext, "bundled", "tool", "baton_bootstrap.py");
      expect(server.bundle()).toBe(bootstrap);
      const found = await server.discover();
      expect(found.length).toBeGreaterThan(0); // python3 or python on this machine's PATH
      for (const c of found) expect(c).toMatchObject({ source: "PATH", bundled: true, args: ["-I", bootstrap, "-m", "baton_lsp", "lsp"] });
      server.dispose();
    } finally {
      rmSync(ext, { recursive: true, force: true });
    }
  });

  it("restarts when the Python extension's environment changes, unless a setting names the server", async () => {
    const changed = new vscode.EventEmitter<unknown>();
    vscode.extensions.getExtension.mockImplementation(() => ({
      isActive: true,
      exports: { environments: {
        getActiveEnvironmentPath: () => ({ id: "a", path: "/envs/a" }),
        resolveEnvironment: async () => ({ executable: { uri: vscode.Uri.file("/envs/a/bin/python") } }),
        onDidChangeActiveEnvironmentPath: changed.event,
      } },
    }));
    const server = new BatonServer(context, "0.1.0");
    const restart = vi.spyOn(server, "scheduleRestart").mockImplementation(() => undefined);
    await server.discover();
    changed.fire({});
    expect(restart).toHaveBeenCalledTimes(1);
    vscode.settings["baton.interpreter"] = "/venv/bin/python";
    changed.fire({});
    expect(restart).toHaveBeenCalledTimes(1);
    server.dispose();
  });
});

describe("logs, readable", () => {
  it("Show Workflow Status renders the status as a read-only Markdown page, not JSON in an untitled buffer", async () => {
    const { run } = setup({ "baton.server.workflow.status": () => failed });
    await run("baton.showWorkflowStatus", failed.workflow_id);
    expect(vscode.workspace.openTextDocument).not.toHaveBeenCalled();
    const [command, uri] = vscode.commands.executeCommand.mock.calls.at(-1) as unknown as [string, vscode.Uri];
    expect(command).toBe("markdown.showPreview");
    expect(uri.scheme).toBe("baton-doc");
    const page = vscode.workspace.providers.get("baton-doc")!.provideTextDocumentContent(uri);
    expect(page).toMatch(/^# add a farewell\n\n\*\*failed\*\* in implement · full-implementation/);
    expect(page).toContain("| implement.phase-2 | implement | failed | 1 | 0.1 s | HARD BARRIER FAILED: artifact not found at");
    expect(page).toContain("## Record");
  });

  it("Open Error opens errors.jsonl at the workflow's line and renders that record beside it", async () => {
    const { run } = setup({});
    const record = { timestamp: "2026-11-21T07:07:19Z", workflow_id: failed.workflow_id, error_type: "validation_error",
      error_message: "wave 2: HARD BARRIER FAILED", source: "implement", context: { wave: 2, failed_steps: ["implement.phase-2"] } };
    const lines = [JSON.stringify({ workflow_id: "other", error_type: "x" }), JSON.stringify(record)];
    vscode.workspace.openTextDocument.mockImplementationOnce((async (arg: unknown) => ({
      arg, lineCount: lines.length, lineAt: (i: number) => ({ text: lines[i], range: { line: i } }),
    })) as never);
    await run("baton.openError", { ...failed, workspace: "/ws" });
    expect(vscode.window.showTextDocument).toHaveBeenCalledWith(expect.anything(), { selection: { line: 1 } });
    const [command, uri] = vscode.commands.executeCommand.mock.calls.at(-1) as unknown as [string, vscode.Uri];
    expect(command).toBe("markdown.showPreviewToSide");
    const page = vscode.workspace.providers.get("baton-doc")!.provideTextDocumentContent(uri);
    expect(page).toContain(`# validation_error: ${failed.workflow_id}`);
    expect(page).toContain("> wave 2: HARD BARRIER FAILED");
    expect(page).toContain("| Source | implement |");
    expect(page).toContain("errors.jsonl line 2");
  });
});

describe("Open Agent Log", () => {
  it("asks the server for the step's log path and opens it", async () => {
    const { server, tree, run } = setup({
      "baton.server.step.log": (arg) => ({ path: `/ws/.claude/data/checkpoints/${String(arg.id)}/logs/${String(arg.step)}.attempt-1.log`, attempt: 1 }),
    });
    await tree.refresh();
    const wf = tree.getChildren().find((n) => n.row.workflow_id === failed.workflow_id)!;
    const implement = wf.children.find((n) => n.label === "implement")!;
    const phase2 = implement.children.flatMap((w) => w.children).find((n) => n.label === "Phase 2")!;
    await run("baton.openAgentLog", phase2);
    expect(server.calls.at(-1)).toEqual(["baton.server.step.log", { id: failed.workflow_id, step: "implement.phase-2" }]);
    const [uri] = vscode.window.showTextDocument.mock.calls.at(-1) as unknown as [vscode.Uri];
    expect(uri.fsPath).toBe(`/ws/.claude/data/checkpoints/${failed.workflow_id}/logs/implement.phase-2.attempt-1.log`);
  });
});

describe("Baton: Re-run Workflow", () => {
  it("confirms in a modal, starts the server's re-run and follows the new run to its end", async () => {
    const { server, tree, run } = setup({
      "baton.server.workflow.rerun": (arg) => {
        queueMicrotask(() => server.fireWorkflow({ workflow_id: "w_new", event: { event: "finished", status: "complete" } }));
        return { workflow_id: "w_new", pid: 3, rerun_of: arg.id };
      },
    });
    await tree.refresh();
    const node = tree.getChildren().find((n) => n.row.workflow_id === failed.workflow_id)!;
    expect(node.contextValue).toMatch(/:finished/);
    vscode.window.showInformationMessage.mockResolvedValueOnce(undefined);
    await run("baton.rerunWorkflow", node);
    expect(server.calls.map(([c]) => c)).not.toContain("baton.server.workflow.rerun");
    const [message, options] = vscode.window.showInformationMessage.mock.calls[0] as [string, { modal: boolean; detail: string }];
    expect(message).toBe('Re-run "add a farewell"?');
    expect(options.modal).toBe(true);

    vscode.window.showInformationMessage.mockResolvedValueOnce("Re-run");
    await run("baton.rerunWorkflow", node);
    expect(server.calls.find(([c]) => c === "baton.server.workflow.rerun")?.[1]).toEqual({ id: failed.workflow_id });
    expect(vscode.window.withProgress).toHaveBeenCalledWith(
      expect.objectContaining({ cancellable: true, title: "Baton: re-run add a farewell" }), expect.any(Function));
    expect(vscode.window.showInformationMessage).toHaveBeenLastCalledWith('Baton: "add a farewell" complete.', "Show Status");
  });

  it("offers finished workflows in the palette's quick pick", async () => {
    const { run } = setup({});
    vscode.window.showQuickPick.mockResolvedValueOnce(undefined);
    await run("baton.rerunWorkflow");
    const items = vscode.window.showQuickPick.mock.calls[0][0] as { label: string }[];
    expect(items.map((i) => i.label).sort()).toEqual(["add a farewell", "add a greeting"]);
  });
});

describe("the output channel", () => {
  it("is a log channel with levels that tells what workflows do", async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    new BatonServer({ subscriptions: [], extensionPath: "/ext" } as any, "0.1.0");
    expect(vscode.window.createOutputChannel).toHaveBeenCalledWith("Baton", { log: true });
    const { server } = setup({});
    server.fireWorkflow({ workflow_id: "w1", event: { event: "transition", source: "research", target: "plan" } as never });
    server.fireWorkflow({ workflow_id: "w1", event: { event: "step", step: "implement.phase-2", state: "implement", status: "failed", message: "summary missing" } as never });
    server.fireWorkflow({ workflow_id: "w1", event: { event: "finished", status: "failed", state: "implement", message: "wave 2" } });
    expect(server.output.info).toHaveBeenCalledWith("w1: plan");
    expect(server.output.warn).toHaveBeenCalledWith("w1: implement.phase-2 failed (summary missing)");
    expect(server.output.error).toHaveBeenCalledWith("w1: finished failed in implement: wave 2");
  });
});
