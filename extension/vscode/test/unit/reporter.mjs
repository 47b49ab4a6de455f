// node --test reporter: one line per test, failures with their error, then "N passed, N failed".
export default async function* reporter(source) {
  let passed = 0;
  let failed = 0;
  for await (const event of source) {
    const { type, data } = event;
    if (type === "test:pass" && data.details?.type !== "suite" && !/\.js$/.test(data.name)) {
      passed++;
      yield `ok   ${data.name}\n`;
    } else if (type === "test:fail" && data.details?.type !== "suite") {
      failed++;
      const error = data.details?.error;
      yield `FAIL ${data.name}\n${String(error?.cause ?? error ?? "").replace(/^/gm, "     ")}\n`;
    } else if (type === "test:stderr" || type === "test:stdout") {
      yield data.message;
    }
  }
  yield `${passed} passed, ${failed} failed\n`;
}
