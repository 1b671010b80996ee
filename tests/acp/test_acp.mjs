// The ACP suite: the official ACP TypeScript SDK (@agentclientprotocol/sdk, client side) drives the
// real `hands acp` binary over stdio, with the scripted model server (tests/agent/scripted_model.py)
// as the only stand-in. One session, three prompts:
//   1. the model plans (todo_write) and writes a file: the client gets a permission request with
//      the diff, approves, gets the tool_call_update with the diff; the file is on disk;
//   2. the model writes another file: the client rejects; the file is not written and the model
//      is told;
//   3. the model runs a long `sleep`: the client cancels; the prompt answers `cancelled` and the
//      sleep is gone;
//   4. in plan mode, exit_plan_mode's plan reaches the client as a permission request; approved,
//      the session is back in build mode;
//   5. bash, allowed always in 3, runs unasked; its output is the call's content.
// Plus: a relative cwd is refused, set_mode switches to plan, stdout carries JSON-RPC only.
// Env: HANDS_BIN (default $CARGO_TARGET_DIR/debug/hands). Exit 1 on any failure.

import * as acp from "@agentclientprotocol/sdk";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough, Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const SCRIPTED_MODEL = path.join(REPO, "tests", "agent", "scripted_model.py");
const HANDS_BIN =
  process.env.HANDS_BIN ||
  path.join(path.resolve(REPO, process.env.CARGO_TARGET_DIR || "target"), "debug", "hands");
const KEY_ENV = "HANDS_ACP_MODEL_KEY";

let passed = 0;
let failed = 0;
function check(name, fn) {
  try {
    fn();
    passed += 1;
    console.log(`ok - ${name}`);
  } catch (err) {
    failed += 1;
    console.log(`not ok - ${name}\n  ${String(err?.stack || err).split("\n").join("\n  ")}`);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `fn` until it returns something truthy: at most `tries` times, 100 ms apart. */
async function until(what, fn, tries = 300) {
  for (let i = 0; i < tries; i += 1) {
    const value = await fn();
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Pids of the processes whose environment says they belong to hands session `session`. */
function sessionProcesses(session) {
  const marker = `HANDS_SESSION=${session}`;
  const pids = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let environ;
    try {
      environ = fs.readFileSync(`/proc/${entry}/environ`, "latin1");
    } catch {
      continue;
    }
    if (environ.split("\0").includes(marker)) {
      let state = "";
      try {
        state = fs.readFileSync(`/proc/${entry}/stat`, "latin1").split(") ")[1]?.[0] ?? "";
      } catch {
        continue;
      }
      if (state !== "Z") pids.push(Number(entry));
    }
  }
  return pids;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "hands-acp-"));
const home = path.join(tmp, "home");
const project = path.join(tmp, "project");
fs.mkdirSync(path.join(home, ".config", "hands"), { recursive: true });
fs.mkdirSync(project, { recursive: true });
fs.writeFileSync(path.join(project, "README.md"), "# a project\n");

// --- the scripted model ---------------------------------------------------------------------------
const CONTENT = "hello from the ACP suite\n";
const PLAN = "1. Add greet() to hello.txt\n2. Check it";
const steps = [
  // prompt 1
  {
    text: "Let me plan first.",
    tool_calls: [
      {
        name: "todo_write",
        input: {
          todos: [
            { id: "1", content: "write hello.txt", status: "in_progress" },
            { id: "2", content: "report", status: "pending" },
          ],
        },
      },
    ],
  },
  { text: "Writing the file.", tool_calls: [{ name: "write_file", input: { path: "hello.txt", content: CONTENT } }] },
  { text: "Done: hello.txt is written." },
  // prompt 2
  { tool_calls: [{ name: "write_file", input: { path: "nope.txt", content: "must not exist\n" } }] },
  { text: "Understood, I left nope.txt alone." },
  // prompt 3
  { tool_calls: [{ name: "bash", input: { command: "sleep 600" } }] },
  // (the cancelled turn asks no more) prompt 4, in plan mode
  { text: "Here is my plan.", tool_calls: [{ name: "exit_plan_mode", input: { plan: PLAN } }] },
  { text: "Plan approved; building now." },
  // prompt 5: bash again, allowed always since prompt 3
  { tool_calls: [{ name: "bash", input: { command: "echo hands-acp-$((40 + 2))" } }] },
  { text: "It printed its line." },
];
const modelDir = path.join(tmp, "model");
fs.mkdirSync(modelDir);
const key = `sk-acp-${randomUUID()}`;
fs.writeFileSync(path.join(modelDir, "script.json"), JSON.stringify({ steps }));
const portFile = path.join(modelDir, "port.txt");
const requestLog = path.join(modelDir, "requests.jsonl");
const model = spawn(
  "python3",
  [SCRIPTED_MODEL, "--format", "anthropic", "--script", path.join(modelDir, "script.json"), "--port", "0",
    "--port-file", portFile, "--log", requestLog, "--expect-key", key],
  { stdio: ["ignore", "inherit", "inherit"] },
);
const port = await until("the scripted model's port", () => {
  try {
    return fs.readFileSync(portFile, "utf8").trim();
  } catch {
    return null;
  }
});

fs.writeFileSync(
  path.join(home, ".config", "hands", "config.toml"),
  [
    `approval = "ask"`,
    ``,
    `[model]`,
    `provider = "anthropic"`,
    `model = "claude-acp"`,
    `base_url = "http://127.0.0.1:${port}"`,
    `api_key_env = "${KEY_ENV}"`,
    ``,
    `[store]`,
    `path = "${path.join(home, "store", "sessions.db")}"`,
    ``,
  ].join("\n"),
);

// --- hands acp ------------------------------------------------------------------------------------
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("HANDS_")));
Object.assign(env, {
  HOME: home,
  XDG_CONFIG_HOME: path.join(home, ".config"),
  XDG_DATA_HOME: path.join(home, ".local", "share"),
  XDG_STATE_HOME: path.join(home, ".local", "state"),
  HANDS_STATE_DIR: path.join(home, "state"),
  [KEY_ENV]: key,
});
const stderrLog = path.join(tmp, "hands-acp.stderr");
const hands = spawn(HANDS_BIN, ["acp"], { cwd: tmp, env, stdio: ["pipe", "pipe", fs.openSync(stderrLog, "w")] });
const stdoutLines = [];
let stdoutRest = "";
const toSdk = new PassThrough();
hands.stdout.on("data", (chunk) => {
  stdoutRest += chunk.toString("utf8");
  const lines = stdoutRest.split("\n");
  stdoutRest = lines.pop();
  stdoutLines.push(...lines);
});
hands.stdout.pipe(toSdk);

const updates = [];
const permissions = [];
let answerPermission = () => ({ outcome: { outcome: "cancelled" } });

const client = acp
  .client()
  .onRequest("session/request_permission", async (ctx) => {
    permissions.push(ctx.params);
    return answerPermission(ctx.params);
  })
  .onNotification("session/update", (ctx) => {
    updates.push(ctx.params);
  });

const stream = acp.ndJsonStream(Writable.toWeb(hands.stdin), Readable.toWeb(toSdk));

const toolUpdates = (id) => updates.filter((n) => n.update.toolCallId === id).map((n) => n.update);

try {
  await client.connectWith(stream, async (agent) => {
    const init = await agent.request("initialize", {
      protocolVersion: acp.PROTOCOL_VERSION,
      clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    });
    check("initialize: protocol v1, capabilities declared honestly", () => {
      assert.equal(init.protocolVersion, 1);
      assert.equal(init.agentInfo.name, "hands");
      assert.equal(init.agentCapabilities.loadSession, false);
      assert.equal(init.agentCapabilities.promptCapabilities.image, false);
    });

    let refused = null;
    try {
      await agent.request("session/new", { cwd: "relative/path", mcpServers: [] });
    } catch (err) {
      refused = err;
    }
    check("session/new refuses a relative cwd with a clear error", () => {
      assert.ok(refused, "session/new with a relative cwd succeeded");
      assert.match(JSON.stringify(refused.data ?? refused.message), /relative/);
    });

    const created = await agent.request("session/new", { cwd: project, mcpServers: [] });
    const sid = created.sessionId;
    check("session/new: a session in build mode, plan and build offered", () => {
      assert.ok(sid);
      assert.equal(created.modes.currentModeId, "build");
      assert.deepEqual(created.modes.availableModes.map((m) => m.id).sort(), ["build", "plan"]);
    });

    // 1. approve a write
    answerPermission = (p) => ({ outcome: { outcome: "selected", optionId: p.options.find((o) => o.kind === "allow_once").optionId } });
    const first = await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "write hello.txt" }] });
    const write = updates.find((n) => n.update.sessionUpdate === "tool_call" && n.update.title === "Edit hello.txt")?.update;
    check("prompt 1 ends end_turn, with the model's text streamed", () => {
      assert.equal(first.stopReason, "end_turn");
      const text = updates.filter((n) => n.update.sessionUpdate === "agent_message_chunk").map((n) => n.update.content.text).join("");
      assert.match(text, /Writing the file\.\s*Done: hello\.txt is written\./);
    });
    check("todo_write's list arrives as a plan", () => {
      const plan = updates.find((n) => n.update.sessionUpdate === "plan")?.update;
      assert.ok(plan, "no plan update");
      assert.deepEqual(plan.entries.map((e) => [e.content, e.status]), [["write hello.txt", "in_progress"], ["report", "pending"]]);
    });
    check("write_file: tool_call pending, kind edit, its location", () => {
      assert.ok(write, "no tool_call titled Edit hello.txt");
      assert.equal(write.kind, "edit");
      assert.equal(write.status ?? "pending", "pending");
      assert.deepEqual(write.locations.map((l) => l.path), [path.join(fs.realpathSync(project), "hello.txt")]);
    });
    check("the permission request shows the diff, offers once/always/reject", () => {
      assert.equal(permissions.length, 1);
      const [p] = permissions;
      assert.equal(p.toolCall.toolCallId, write.toolCallId);
      assert.deepEqual(p.options.map((o) => o.kind), ["allow_once", "allow_always", "reject_once"]);
      const diff = p.toolCall.content.find((c) => c.type === "diff");
      assert.ok(diff, JSON.stringify(p.toolCall));
      assert.equal(diff.newText, CONTENT);
      assert.equal(diff.oldText ?? null, null);
    });
    check("tool_call_update: in_progress then completed with the diff", () => {
      const seq = toolUpdates(write.toolCallId).filter((u) => u.sessionUpdate === "tool_call_update");
      const statuses = seq.map((u) => u.status).filter(Boolean);
      assert.deepEqual(statuses, ["in_progress", "completed"]);
      const diff = seq.at(-1).content.find((c) => c.type === "diff");
      assert.ok(diff, JSON.stringify(seq.at(-1)));
      assert.equal(diff.path, path.join(fs.realpathSync(project), "hello.txt"));
      assert.equal(diff.newText, CONTENT);
      assert.equal(diff.oldText ?? null, null);
    });
    check("the file is on disk with that content", () => {
      assert.equal(fs.readFileSync(path.join(project, "hello.txt"), "utf8"), CONTENT);
    });

    // 2. reject a write
    answerPermission = (p) => ({ outcome: { outcome: "selected", optionId: p.options.find((o) => o.kind === "reject_once").optionId } });
    const before = updates.length;
    const second = await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "write nope.txt" }] });
    const rejected = updates.slice(before).find((n) => n.update.sessionUpdate === "tool_call")?.update;
    check("a rejected write is not run: failed, no file, the model is told", () => {
      assert.equal(second.stopReason, "end_turn");
      assert.equal(permissions.length, 2);
      assert.equal(fs.existsSync(path.join(project, "nope.txt")), false);
      const last = toolUpdates(rejected.toolCallId).at(-1);
      assert.equal(last.status, "failed");
      const requests = fs.readFileSync(requestLog, "utf8").trim().split("\n").map((l) => JSON.parse(l));
      // The model's next request carries the refusal as the call's result.
      const results = requests.flatMap((r) => r.messages.at(-1).content)
        .filter((b) => typeof b === "object" && b.type === "tool_result");
      const told = results.find((b) => /rejected/.test(JSON.stringify(b.content)));
      assert.ok(told, JSON.stringify(results));
      assert.equal(told.is_error, true);
    });

    // 3. cancel a long bash (allowed always: prompt 5 runs bash unasked)
    answerPermission = (p) => ({ outcome: { outcome: "selected", optionId: p.options.find((o) => o.kind === "allow_always").optionId } });
    const mark = updates.length;
    const third = agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "run the long job" }] });
    const bash = await until("the bash call", () => updates.slice(mark).find((n) => n.update.sessionUpdate === "tool_call")?.update);
    await until("bash in progress", () => toolUpdates(bash.toolCallId).some((u) => u.status === "in_progress"));
    const running = await until("the sleep process", () => {
      const pids = sessionProcesses(sid);
      return pids.length ? pids : null;
    });
    await agent.notify("session/cancel", { sessionId: sid });
    const cancelled = await third;
    check("bash: kind execute, titled with its command", () => {
      assert.equal(bash.kind, "execute");
      assert.equal(bash.title, "`sleep 600`");
    });
    check("session/cancel: the prompt answers cancelled", () => {
      assert.equal(cancelled.stopReason, "cancelled");
    });
    const survivors = await until("the session's processes to be gone", () => {
      const left = sessionProcesses(sid);
      return left.length === 0 ? [] : null;
    }, 100).catch(() => sessionProcesses(sid));
    check("the sleep is killed: no process of the session survives", () => {
      assert.ok(running.length > 0);
      assert.deepEqual(survivors, []);
    });
    check("the cancelled call ends failed", () => {
      assert.equal(toolUpdates(bash.toolCallId).at(-1).status, "failed");
    });

    // modes
    const modeMark = updates.length;
    await agent.request("session/set_mode", { sessionId: sid, modeId: "plan" });
    check("session/set_mode plan: current_mode_update", () => {
      const update = updates.slice(modeMark).find((n) => n.update.sessionUpdate === "current_mode_update");
      assert.equal(update?.update.currentModeId, "plan");
    });

    // 4. plan mode: exit_plan_mode's plan goes to the client for approval
    const asked = permissions.length;
    const planMark = updates.length;
    answerPermission = (p) => ({ outcome: { outcome: "selected", optionId: p.options.find((o) => o.kind === "allow_once").optionId } });
    const fourth = await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "plan the greeting" }] });
    check("exit_plan_mode: the plan in a permission request, approved, back to build", () => {
      assert.equal(fourth.stopReason, "end_turn");
      assert.equal(permissions.length, asked + 1);
      const p = permissions.at(-1);
      assert.equal(p.toolCall.kind, "switch_mode");
      assert.deepEqual(p.options.map((o) => o.kind), ["allow_once", "reject_once"]);
      assert.deepEqual(p.toolCall.content, [{ type: "content", content: { type: "text", text: PLAN } }]);
      const mode = updates.slice(planMark).filter((n) => n.update.sessionUpdate === "current_mode_update").at(-1);
      assert.equal(mode?.update.currentModeId, "build");
    });

    // 5. bash, allowed always in prompt 3: not asked again; its output is the call's content
    const asked5 = permissions.length;
    const mark5 = updates.length;
    const fifth = await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "print the line" }] });
    check("allow always: bash runs unasked, its output in the final update", () => {
      assert.equal(fifth.stopReason, "end_turn");
      assert.equal(permissions.length, asked5);
      const call = updates.slice(mark5).find((n) => n.update.sessionUpdate === "tool_call")?.update;
      assert.equal(call?.kind, "execute");
      const last = toolUpdates(call.toolCallId).at(-1);
      assert.equal(last.status, "completed");
      const text = last.content.map((c) => c.content?.text ?? "").join("\n");
      assert.match(text, /hands-acp-42/);
    });
  });
} catch (err) {
  failed += 1;
  console.log(`not ok - the session ran to its end\n  ${String(err?.stack || JSON.stringify(err))}`);
} finally {
  hands.stdin.end();
  const exited = await Promise.race([
    new Promise((r) => hands.once("exit", () => r(true))),
    sleep(10000).then(() => false),
  ]);
  if (!exited) hands.kill("SIGKILL");
  model.kill("SIGTERM");
}

check("stdout carried JSON-RPC only", () => {
  assert.ok(stdoutLines.length > 10);
  for (const line of stdoutLines) {
    const message = JSON.parse(line);
    assert.equal(message.jsonrpc, "2.0", line);
  }
});
check("hands acp ended when stdin closed", () => assert.notEqual(hands.exitCode, null));
check("the model key is in no line hands wrote", () => {
  const all = stdoutLines.join("\n") + fs.readFileSync(stderrLog, "utf8");
  assert.equal(all.includes(key), false);
});

if (failed) {
  console.log(`--- hands acp's stderr (${stderrLog}):\n${fs.readFileSync(stderrLog, "utf8").slice(-4000)}`);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
