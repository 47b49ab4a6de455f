import assert from "node:assert/strict";
import { test } from "node:test";
import { DEFAULT_SETTINGS, needsRestart, toServerOptions } from "../../src/pure/initOptions";

test("defaults send only the interpreter and the profile's timeout (steps: automatic)", () => {
  const profile = { profileTimeout: 300 };
  assert.deepEqual(toServerOptions(DEFAULT_SETTINGS), profile);
  assert.deepEqual(toServerOptions(DEFAULT_SETTINGS, "/env/bin/python"), { ...profile, interpreter: "/env/bin/python" });
});

test("profile settings map onto profileSteps, profileTimeout and runFolder", () => {
  const options = toServerOptions({ ...DEFAULT_SETTINGS, profileSteps: 3, profileTimeout: 60, runFolder: " runs " });
  assert.deepEqual(options, { profileSteps: 3, profileTimeout: 60, runFolder: "runs" });
  const bad = toServerOptions({ ...DEFAULT_SETTINGS, profileSteps: 2.5, profileTimeout: 0, runFolder: "" });
  assert.deepEqual(bad, {});
});

test("profile steps null or 0 are automatic: not sent, so the server passes no --active", () => {
  for (const profileSteps of [null, 0, undefined]) {
    const options = toServerOptions({ ...DEFAULT_SETTINGS, profileSteps });
    assert.ok(!("profileSteps" in options), String(profileSteps));
  }
  assert.equal(DEFAULT_SETTINGS.profileSteps, null);
  assert.equal(toServerOptions({ ...DEFAULT_SETTINGS, profileSteps: 1 }).profileSteps, 1);
});

test("settings map onto the server's [tool.torchtriage] keys", () => {
  const options = toServerOptions(
    { ...DEFAULT_SETTINGS, select: ["TT1", " TT302 ", ""], ignore: ["TT504"], severity: { tt101: "ERROR" }, device: "cuda" },
    "/py",
  );
  assert.deepEqual(options, {
    select: ["TT1", "TT302"], ignore: ["TT504"], severity: { TT101: "error" }, device: "cuda", interpreter: "/py",
    profileTimeout: 300,
  });
});

test("only keys the server knows are sent", () => {
  const options = toServerOptions({ ...DEFAULT_SETTINGS, enable: false, annotationsEnable: false, traceServer: "verbose" });
  const allowed = new Set(["select", "ignore", "severity", "device", "interpreter", "profileSteps", "profileTimeout", "runFolder"]);
  for (const key of Object.keys(options)) assert.ok(allowed.has(key), key);
});

test("malformed values are dropped, not sent", () => {
  const options = toServerOptions({ select: "TT1" as unknown as string[], severity: null as unknown as Record<string, string> });
  assert.deepEqual(options, {});
});

test("interpreter or enable changes restart the server; others do not", () => {
  assert.ok(needsRestart(DEFAULT_SETTINGS, { ...DEFAULT_SETTINGS, interpreter: "/py" }));
  assert.ok(needsRestart(DEFAULT_SETTINGS, { ...DEFAULT_SETTINGS, enable: false }));
  assert.ok(!needsRestart(DEFAULT_SETTINGS, { ...DEFAULT_SETTINGS, select: ["TT1"] }));
});
