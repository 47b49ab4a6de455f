import assert from "node:assert/strict";
import { test } from "node:test";
import { LookupSources, lookupInterpreter, lookupMessage, meetsMinimum, parseVersion } from "../../src/pure/interpreterLookup";

function sources(over: Partial<LookupSources> = {}): LookupSources {
  return {
    setting: "",
    pythonExtensionInstalled: true,
    pythonExtension: async () => "/env/bin/python",
    onPath: async () => "/usr/bin/python3",
    ...over,
  };
}
const okProbe = async () => ({ ok: true as const, output: "torchtriage 0.1.0\n" });

test("the setting wins over the Python extension and PATH", async () => {
  const log: string[] = [];
  const result = await lookupInterpreter(sources({ setting: "/my/python" }), okProbe, (l) => log.push(l));
  assert.deepEqual(result, { kind: "ok", python: "/my/python", source: "setting", version: "0.1.0" });
  assert.equal(log[0], "1. torchtriage.interpreter setting: /my/python");
  assert.ok(!log.some((l) => l.startsWith("2.")), "later steps are not consulted");
});

test("the Python extension's environment comes second, and each step is logged", async () => {
  const log: string[] = [];
  const result = await lookupInterpreter(sources(), okProbe, (l) => log.push(l));
  assert.equal(result.kind === "ok" && result.python, "/env/bin/python");
  assert.equal(result.kind === "ok" && result.source, "python-extension");
  assert.deepEqual(log.slice(0, 3), [
    "1. torchtriage.interpreter setting: not set",
    "2. Python extension active environment: /env/bin/python",
    "checking: /env/bin/python -m torchtriage --version",
  ]);
});

test("python3 on PATH is last: no Python extension, or it has no environment", async () => {
  for (const over of [{ pythonExtensionInstalled: false }, { pythonExtension: async () => undefined }]) {
    const log: string[] = [];
    const result = await lookupInterpreter(sources(over), okProbe, (l) => log.push(l));
    assert.equal(result.kind === "ok" && result.source, "path");
    assert.equal(result.kind === "ok" && result.python, "/usr/bin/python3");
    assert.ok(log.includes("3. python3 on PATH: /usr/bin/python3"));
  }
});

test("nothing found", async () => {
  const result = await lookupInterpreter(
    sources({ pythonExtensionInstalled: false, onPath: async () => undefined }),
    okProbe,
    () => undefined,
  );
  assert.deepEqual(result, { kind: "none" });
  assert.match(lookupMessage(result)!, /no Python found/);
});

test("a chosen interpreter without torchtriage is reported, not skipped", async () => {
  let probed = 0;
  const result = await lookupInterpreter(
    sources({ setting: "/my/python" }),
    async () => (probed++, { ok: false as const, error: "No module named torchtriage", notFound: false }),
    () => undefined,
  );
  assert.equal(probed, 1);
  assert.equal(result.kind, "missing");
  assert.equal(lookupMessage(result), "torchtriage: torchtriage is not installed in /my/python (from the torchtriage.interpreter setting).");
});

test("a missing executable is named, never a bare ENOENT", async () => {
  const result = await lookupInterpreter(
    sources({ setting: "/nope/python" }),
    async () => ({ ok: false as const, error: "spawn /nope/python ENOENT", notFound: true }),
    () => undefined,
  );
  assert.equal(result.kind, "not-found");
  const message = lookupMessage(result)!;
  assert.match(message, /\/nope\/python .*does not exist or cannot be run/);
  assert.doesNotMatch(message, /ENOENT/);
});

test("versions below the minimum are too old", async () => {
  const result = await lookupInterpreter(
    sources(),
    async () => ({ ok: true as const, output: "torchtriage 0.0.9" }),
    () => undefined,
    "0.1.0",
  );
  assert.equal(result.kind, "too-old");
  assert.match(lookupMessage(result, "0.1.0")!, /has torchtriage 0.0.9, older than 0.1.0/);
});

test("version parsing and comparison", () => {
  assert.deepEqual(parseVersion("torchtriage 0.1.0"), [0, 1, 0]);
  assert.deepEqual(parseVersion("1.2"), [1, 2, 0]);
  assert.equal(parseVersion("torchtriage"), undefined);
  assert.ok(meetsMinimum("torchtriage 0.1.0", "0.1.0"));
  assert.ok(meetsMinimum("0.10.0", "0.9.5"));
  assert.ok(!meetsMinimum("0.0.9", "0.1.0"));
  assert.ok(!meetsMinimum("garbage", "0.1.0"));
});
