// The package's declarative contributions, checked against real files and real output:
// jsonValidation through vscode-json-languageservice (the library VS Code's JSON extension
// validates with), the TOML schema association, the `$baton` problem matcher applied to
// `baton check`'s text output, and the getting-started walkthrough.
//
// Fixtures were written by the real CLI on a copy of examples/workspace: test/fixtures/check
// is `baton check .` and `baton check --format json .`; test/fixtures/records holds a
// checkpoint, run.json and an iteration checkpoint of `baton run … --set
// workflow.implement-mode=iterations`, research_supervisor.json and supervisor_metadata.json of
// `--complexity 4 --set workflow.research-mode=supervisor`, implementation_supervisor.json and
// testing_supervisor.json of tests/workflow/test_sub_supervisors.py's three-domain and
// two-test-type runs, and a schema 1.2 checkpoint the seeds' bash system wrote
// (../shared/corpus).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { getLanguageService, TextDocument } from "vscode-json-languageservice";
import pkg from "../package.json";

const HERE = dirname(fileURLToPath(import.meta.url));
const EXTENSION = dirname(HERE);
const REPO = dirname(EXTENSION);
const SCHEMAS = join(REPO, "schemas");
const FIXTURES = join(HERE, "fixtures");
const EXTENSION_URI = "file:///extension";
const WID = "full_implementation_1795935928_20300c96";

type Association = { fileMatch: string[]; uri: string };

/** `contributes.jsonValidation` as VS Code's JSON extension hands it to the language service
 * (extensions/json-language-features, getSchemaAssociations): patterns that start with
 * neither a scheme, `/` nor `!` get a leading `/`, and `./` URLs resolve in the extension. */
function associations(): Association[] {
  return pkg.contributes.jsonValidation.map(({ fileMatch, url }) => ({
    fileMatch: (typeof fileMatch === "string" ? [fileMatch] : fileMatch).map((fm) =>
      /^(\w+:\/\/|\/|!)/.test(fm) ? fm : `/${fm}`),
    uri: url.startsWith("./") ? `${EXTENSION_URI}/${url.slice(2)}` : url,
  }));
}

const service = getLanguageService({
  // The build copies ../schemas into the extension's schemas/ (scripts/build.mjs).
  schemaRequestService: async (uri) => readFileSync(join(SCHEMAS, basename(uri)), "utf8"),
});
service.configure({ validate: true, allowComments: true, schemas: associations() });

async function validate(workspacePath: string, fixture: string) {
  const document = TextDocument.create(`file:///home/me/project/${workspacePath}`, "json", 1,
    readFileSync(join(FIXTURES, "records", fixture), "utf8"));
  const json = service.parseJSONDocument(document);
  const problems = await service.doValidation(document, json);
  const schemas = service.getLanguageStatus(document, json).schemas.map((s) => basename(s));
  return { schemas, problems: problems.map((p) => p.message) };
}

describe("jsonValidation: each file Baton writes gets its own schema, and passes it", () => {
  it.each([
    [`.claude/data/checkpoints/${WID}/000025.json`, "checkpoint.json", "checkpoint.schema.json"],
    [`.claude/data/checkpoints/build_${WID}_iteration_1.json`, "iteration.json",
      "iteration-checkpoint.schema.json"],
    [".claude/tmp/research_supervisor.json", "research_supervisor.json",
      "supervisor-checkpoint.schema.json"],
    [".claude/tmp/implementation_supervisor.json", "implementation_supervisor.json",
      "supervisor-checkpoint.schema.json"],
    [".claude/tmp/testing_supervisor.json", "testing_supervisor.json",
      "supervisor-checkpoint.schema.json"],
  ])("%s", async (path, fixture, schema) => {
    expect(await validate(path, fixture)).toEqual({ schemas: [schema], problems: [] });
  });

  it.each([
    // The run record beside the checkpoints: not a checkpoint.
    [`.claude/data/checkpoints/${WID}/run.json`, "run.json"],
    // The bash system's own checkpoints (schema 1.0 to 2.1) are checked by the server, which
    // reads every version (BTN410-417); the 2.1 schema would call a sound 1.2 file broken.
    [".claude/data/checkpoints/implement_test_project_1760394749.json", "bash_checkpoint_1_2.json"],
    [".claude/tmp/supervisor_metadata.json", "supervisor_metadata.json"],
  ])("%s has no schema", async (path, fixture) => {
    expect(await validate(path, fixture)).toEqual({ schemas: [], problems: [] });
  });

  it("shows a real error where a checkpoint is broken", async () => {
    const text = readFileSync(join(FIXTURES, "records", "checkpoint.json"), "utf8")
      .replace(/"schema_version":\s*"2\.1"/, '"schema_version": 21');
    const document = TextDocument.create(
      `file:///home/me/project/.claude/data/checkpoints/${WID}/000026.json`, "json", 1, text);
    const problems = await service.doValidation(document, service.parseJSONDocument(document));
    expect(problems.map((p) => p.message).join("\n")).toMatch(/Incorrect type/);
  });

  it("wires every schema Baton ships that applies to a JSON or TOML file, and says why not the others", () => {
    const wired = new Set([...pkg.contributes.jsonValidation, ...pkg.contributes.tomlValidation]
      .map((v) => basename(v.url)));
    for (const v of [...pkg.contributes.jsonValidation, ...pkg.contributes.tomlValidation]) {
      expect(existsSync(join(SCHEMAS, basename(v.url))), v.url).toBe(true);
    }
    const docs = readFileSync(join(REPO, "docs", "editors.md"), "utf8");
    for (const name of readdirSync(SCHEMAS).filter((n) => n.endsWith(".schema.json"))) {
      if (!wired.has(name)) expect(docs, `${name}: neither wired nor explained`).toContain(`\`${name}\``);
    }
    expect([...wired].sort()).toEqual(["baton-config.schema.json", "checkpoint.schema.json",
      "iteration-checkpoint.schema.json", "supervisor-checkpoint.schema.json"]);
  });
});

describe("tomlValidation: .claude/baton.toml for Even Better TOML and Tombi", () => {
  it("matches the configuration file's URI and nothing else", () => {
    const [toml] = pkg.contributes.tomlValidation;
    const match = new RegExp(toml.regexMatch);
    expect(match.test("file:///home/me/project/.claude/baton.toml")).toBe(true);
    expect(match.test("file:///home/me/project/pyproject.toml")).toBe(false);
    expect(match.test("file:///home/me/project/baton.toml")).toBe(false);
    expect(match.test("file:///home/me/project/.claude/baton.toml.bak")).toBe(false);
    const schema = JSON.parse(readFileSync(join(SCHEMAS, basename(toml.url)), "utf8"));
    expect(Object.keys(schema.properties)).toEqual(expect.arrayContaining(["select", "workflow"]));
  });
});

type Finding = { code: string; message: string; filename: string; location: { line: number; column: number } };

describe("the $baton problem matcher on `baton check`'s text output", () => {
  const [matcher] = pkg.contributes.problemMatchers;
  // VS Code compiles a problem pattern's regexp with `new RegExp`.
  const regexp = new RegExp(matcher.pattern.regexp);
  const lines = readFileSync(join(FIXTURES, "check", "check.txt"), "utf8").trimEnd().split("\n");
  const findings: Finding[] = JSON.parse(readFileSync(join(FIXTURES, "check", "check.json"), "utf8"));

  it("reads every finding line as the JSON output reports it", () => {
    const matched = lines.map((line) => regexp.exec(line)).filter((m) => m !== null);
    const read = matched.map((m) => ({
      file: m[matcher.pattern.file], line: Number(m[matcher.pattern.line]),
      column: Number(m[matcher.pattern.column]), code: m[matcher.pattern.code],
      message: m[matcher.pattern.message],
    }));
    expect(read).toEqual(findings.map((f) => ({
      file: f.filename, line: f.location.line, column: f.location.column, code: f.code,
      message: f.message,
    })));
    expect(read.length).toBe(16);
  });

  it("leaves the summary line alone", () => {
    expect(lines.at(-1)).toMatch(/^Found 16 problems/);
    expect(regexp.test(lines.at(-1) ?? "")).toBe(false);
  });

  it("is a named matcher a task refers to as $baton, with paths relative or absolute", () => {
    expect(matcher.name).toBe("baton");
    expect(matcher.owner).toBe("baton-check");
    expect(matcher.fileLocation).toEqual(["autoDetect", "${workspaceFolder}"]);
    const abs = regexp.exec("/home/me/project/.claude/agents/a.md:3:1: BTN201 missing `description`");
    expect(abs?.slice(1)).toEqual(["/home/me/project/.claude/agents/a.md", "3", "1", "BTN201",
      "missing `description`"]);
  });
});

describe("the getting-started walkthrough", () => {
  const [walkthrough] = pkg.contributes.walkthroughs;
  const commands = new Set(pkg.contributes.commands.map((c) => c.command));
  const views = new Set(pkg.contributes.views.baton.map((v) => v.id));

  it("checks, starts, reads the tree, resumes — in that order", () => {
    expect(walkthrough.steps.map((s) => s.id)).toEqual(["check", "start", "tree", "resume"]);
  });

  it("links and completes on commands and views the extension contributes", () => {
    for (const step of walkthrough.steps) {
      const links = [...step.description.matchAll(/\(command:([\w.]+)\)/g)].map((m) => m[1]);
      expect(links.length, step.id).toBeGreaterThan(0);
      for (const id of links) {
        const focus = id.endsWith(".focus") && views.has(id.slice(0, -".focus".length));
        expect(commands.has(id) || focus, `${step.id}: ${id}`).toBe(true);
      }
      expect(step.completionEvents.length, step.id).toBeGreaterThan(0);
      for (const event of step.completionEvents) {
        const [kind, id] = event.split(":");
        expect(kind === "onCommand" ? commands.has(id) : kind === "onView" && views.has(id), event).toBe(true);
      }
    }
  });

  it("has a page for every step, packaged with the extension", () => {
    const ignore = readFileSync(join(EXTENSION, ".vscodeignore"), "utf8");
    expect(ignore).toContain("!media/**");
    for (const step of walkthrough.steps) {
      const page = join(EXTENSION, step.media.markdown);
      expect(step.media.markdown.startsWith("media/"), step.id).toBe(true);
      expect(readFileSync(page, "utf8"), step.id).toMatch(new RegExp(`^# ${step.title}\\n`));
    }
  });
});
