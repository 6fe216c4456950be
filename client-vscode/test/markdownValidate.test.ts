// The offer to stop VS Code's Markdown validation from flagging Baton's markers.
import { beforeEach, describe, expect, it } from "vitest";
import * as vscode from "./vscode";
import pkg from "../package.json";

const { offerMarkdownValidateFix, OFFER } = await import("../src/markdownValidate");

function memento() {
  const data = new Map<string, unknown>();
  return { get: <T>(k: string) => data.get(k) as T | undefined, update: async (k: string, v: unknown) => { data.set(k, v); }, keys: () => [...data.keys()] };
}

beforeEach(() => vscode.reset());

describe("markdown.validate and Baton's markers", () => {
  it("offers, when validation is on, to ignore reference links in the workspace settings", async () => {
    vscode.settings["markdown.validate.enabled"] = true;
    vscode.window.showInformationMessage.mockResolvedValueOnce(OFFER);
    const state = memento();
    expect(await offerMarkdownValidateFix(state as never)).toBe(true);
    expect(vscode.window.showInformationMessage.mock.calls[0][0]).toMatch(/\[NOT STARTED\]/);
    expect(vscode.settings["markdown.validate.referenceLinks.enabled"]).toBe("ignore");
    // Asked once per workspace, whatever the answer.
    delete vscode.settings["markdown.validate.referenceLinks.enabled"];
    expect(await offerMarkdownValidateFix(state as never)).toBe(false);
    expect(vscode.window.showInformationMessage).toHaveBeenCalledTimes(1);
  });

  it("says nothing when validation is off or already ignores reference links", async () => {
    expect(await offerMarkdownValidateFix(memento() as never)).toBe(false);
    vscode.settings["markdown.validate.enabled"] = true;
    vscode.settings["markdown.validate.referenceLinks.enabled"] = "ignore";
    expect(await offerMarkdownValidateFix(memento() as never)).toBe(false);
    expect(vscode.window.showInformationMessage).not.toHaveBeenCalled();
  });

  it("changes no Markdown default for other workspaces (no configurationDefaults)", () => {
    expect((pkg.contributes as Record<string, unknown>).configurationDefaults).toBeUndefined();
  });
});
