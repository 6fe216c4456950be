// VS Code's own Markdown link validation (`markdown.validate.enabled`) reads Baton's status
// markers (`[NOT STARTED]`, `[COMPLETE]`) and dependency lists (`[1]`, `[1, 2]`) as shortcut
// reference links without a definition and flags every one. Its `markdown.validate.ignoredLinks`
// globs are not consulted for reference links (only for file and fragment links), so the only
// setting that silences them is `markdown.validate.referenceLinks.enabled`. That is not
// contributed as a default (it would change every Markdown file in every workspace); the
// extension offers to set it for the workspace, once, when validation is on.
import * as vscode from "vscode";

export const REFERENCE_LINKS = "validate.referenceLinks.enabled";
export const OFFER = "Ignore Reference Links in This Workspace";
const ASKED = "baton.markdownValidate.asked";

/** True when VS Code's Markdown validation is on and would flag Baton's markers. */
export function flagsMarkers(markdown: { get<T>(key: string): T | undefined }): boolean {
  return markdown.get<boolean>("validate.enabled") === true && markdown.get<string>(REFERENCE_LINKS) !== "ignore";
}

/** Offers (once per workspace) to set `markdown.validate.referenceLinks.enabled` to `ignore`
 * in the workspace settings. */
export async function offerMarkdownValidateFix(state: vscode.Memento): Promise<boolean> {
  const markdown = vscode.workspace.getConfiguration("markdown");
  if (!flagsMarkers(markdown) || state.get<boolean>(ASKED)) return false;
  await state.update(ASKED, true);
  const pick = await vscode.window.showInformationMessage(
    "Baton: VS Code's Markdown validation reports Baton's [NOT STARTED]/[COMPLETE] markers and [1] dependency lists as missing link definitions. Baton checks these files itself.",
    OFFER, "Keep");
  if (pick !== OFFER) return false;
  await markdown.update(REFERENCE_LINKS, "ignore", vscode.ConfigurationTarget.Workspace);
  return true;
}
