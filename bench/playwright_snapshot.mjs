// Playwright MCP's snapshot of a page, for bench/preview_interact.sh: starts `playwright-mcp`
// (its bin given as the first argument) over stdio with the Debian Chromium, navigates to each URL
// given after it, and prints `PLAYWRIGHT <url> <bytes> <outline bytes>`: the size of the text its
// browser_snapshot returns (what the model would read), and of the outline in it (the yaml block,
// without the page's URL, title and console counts above it). With PW_DUMP=DIR set, the texts are also
// written there (snapshot-1.txt, …) to be read side by side with hands' outlines.
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

const [bin, ...urls] = process.argv.slice(2);
const server = spawn(bin, ["--headless", "--isolated", "--no-sandbox", "--browser", "chromium",
  "--executable-path", "/usr/bin/chromium"], { stdio: ["pipe", "pipe", "inherit"] });
let buffer = "";
const waiting = new Map();
server.stdout.on("data", (chunk) => {
  buffer += chunk;
  let end;
  while ((end = buffer.indexOf("\n")) >= 0) {
    const line = buffer.slice(0, end);
    buffer = buffer.slice(end + 1);
    if (!line.trim()) continue;
    const message = JSON.parse(line);
    if (message.id !== undefined && waiting.has(message.id)) {
      waiting.get(message.id)(message);
      waiting.delete(message.id);
    }
  }
});
let next = 1;
function call(method, params) {
  const id = next++;
  server.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  return new Promise((resolve) => waiting.set(id, resolve));
}
const text = (result) => (result.result?.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");

await call("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "bench", version: "1" } });
server.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");
for (const url of urls) {
  await call("tools/call", { name: "browser_navigate", arguments: { url } });
  const snapshot = text(await call("tools/call", { name: "browser_snapshot", arguments: {} }));
  const yaml = snapshot.match(/```yaml\n([\s\S]*?)\n?```/);
  console.log(`PLAYWRIGHT ${url} ${Buffer.byteLength(snapshot)} ${yaml ? Buffer.byteLength(yaml[1]) : 0}`);
  if (process.env.PW_DUMP) writeFileSync(`${process.env.PW_DUMP}/snapshot-${urls.indexOf(url) + 1}.txt`, snapshot);
}
server.kill();
process.exit(0);
