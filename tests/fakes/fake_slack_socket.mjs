// A loopback fake of Slack for a real OpenClaw gateway: the Web API the Slack channel plugin
// calls and Socket Mode (apps.connections.open hands out a ws:// URL on this same port).
//
// Point a gateway at it with SLACK_API_URL=http://127.0.0.1:<port>/api/. Start it with the
// runtime's Node (tests/fakes/fake_slack_socket.py does): `node fake_slack_socket.mjs [PORT]`
// (0 or nothing: a free port). It prints `listening <port>` once ready.
//
// Tokens: FAKE_SLACK_BOT_TOKEN / FAKE_SLACK_APP_TOKEN, when set, are the only ones accepted
// (others get invalid_auth); unset, any xoxb-/xapp- token passes. Tokens are never logged or
// recorded: a call records which kind came ("bot", "app", "unknown", "none").
//
// Control endpoints, for the test:
//   GET  /_requests  every Web API call so far: [{method, channel, text, token}]
//   GET  /_state     {connections: open Socket Mode connections, hellos: hellos sent, acks: [envelope ids]}
//   POST /_mention   {channel, text, user?} → an app_mention event to every open connection;
//                    {delivered, envelopeId} (409 when no connection is open)
import http from "node:http";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

// `ws` comes from the runtime's OpenClaw install (repo/runtime, or OCC_RUNTIME_DIR).
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const runtimeDir = path.resolve(process.env.OCC_RUNTIME_DIR || path.join(repo, "runtime"));
const require = createRequire(path.join(runtimeDir, "openclaw", "node_modules") + path.sep);
const { WebSocketServer, WebSocket } = require("ws");

const TEAM_ID = "T0FAKE01";
const BOT = { user_id: "U0BOT0001", bot_id: "B0BOT0001", app_id: "A0FAKE01", name: "occ-agent" };
const PEOPLE = { U0ALICE01: { name: "alice", real_name: "Alice" } };
const BOT_TOKEN = process.env.FAKE_SLACK_BOT_TOKEN || "";
const APP_TOKEN = process.env.FAKE_SLACK_APP_TOKEN || "";
const BODY_LIMIT = 1024 * 1024;

const log = (...parts) => console.log(new Date().toISOString(), ...parts);
const calls = [];
const acks = [];
let hellos = 0;
let events = 0;
let port = Number(process.argv[2] || 0);

function tokenKind(token) {
  if (!token) return "none";
  if (BOT_TOKEN ? token === BOT_TOKEN : token.startsWith("xoxb-")) return "bot";
  if (APP_TOKEN ? token === APP_TOKEN : token.startsWith("xapp-")) return "app";
  return "unknown";
}

function parseBody(contentType, raw) {
  if (!raw) return {};
  if ((contentType || "").includes("application/json")) {
    try {
      const parsed = JSON.parse(raw);
      return parsed && typeof parsed === "object" ? parsed : {};
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(raw));
}

function send(res, code, body) {
  const data = JSON.stringify(body);
  res.writeHead(code, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(data) });
  res.end(data);
}

function nowTs() {
  events += 1;
  return `${Math.floor(Date.now() / 1000)}.${String(events).padStart(6, "0")}`;
}

// --- the Web API ---------------------------------------------------------------------------

function webApi(method, params, kind) {
  const wanted = method === "apps.connections.open" ? "app" : "bot";
  if (kind === "none") return { ok: false, error: "not_authed" };
  if (kind !== wanted) return { ok: false, error: "invalid_auth" };
  const channel = typeof params.channel === "string" ? params.channel : "";
  switch (method) {
    case "auth.test":
      return { ok: true, url: "https://fake.slack.test/", team: "Fake Workspace", user: BOT.name, team_id: TEAM_ID,
               user_id: BOT.user_id, bot_id: BOT.bot_id };
    case "apps.connections.open":
      return { ok: true, url: `ws://127.0.0.1:${port}/link` };
    case "bots.info":
      return { ok: true, bot: { id: BOT.bot_id, user_id: BOT.user_id, app_id: BOT.app_id, name: BOT.name } };
    case "users.info": {
      const id = String(params.user || "");
      const person = id === BOT.user_id ? { name: BOT.name, real_name: BOT.name } : PEOPLE[id];
      if (!person) return { ok: false, error: "user_not_found" };
      return { ok: true, user: { id, team_id: TEAM_ID, name: person.name, real_name: person.real_name,
                                 is_bot: id === BOT.user_id, profile: { display_name: person.real_name } } };
    }
    case "conversations.info":
      return { ok: true, channel: { id: channel, name: `channel-${channel.toLowerCase()}`, is_channel: true,
                                    is_private: false, is_member: true } };
    case "conversations.history":
    case "conversations.replies":
      return { ok: true, messages: [], has_more: false };
    case "chat.postMessage":
      return { ok: true, channel, ts: nowTs(), message: { type: "message", text: params.text ?? "", user: BOT.user_id,
                                                          bot_id: BOT.bot_id } };
    default:
      // reactions.add, assistant.threads.*, chat.update...: accepted, nothing to return.
      return { ok: true };
  }
}

// --- Socket Mode ---------------------------------------------------------------------------

let wss;

function openSockets() {
  return [...wss.clients].filter((ws) => ws.readyState === WebSocket.OPEN);
}

function mention({ channel, text, user }) {
  const ts = nowTs();
  const envelopeId = `env-${events}`;
  const event = { type: "app_mention", user: user || "U0ALICE01", text, ts, channel, channel_type: "channel",
                  event_ts: ts, team: TEAM_ID };
  const envelope = {
    envelope_id: envelopeId, type: "events_api", accepts_response_payload: false, retry_attempt: 0, retry_reason: "",
    payload: { team_id: TEAM_ID, api_app_id: BOT.app_id, type: "event_callback", event, event_id: `Ev${events}`,
               event_time: Math.floor(Date.now() / 1000),
               authorizations: [{ team_id: TEAM_ID, user_id: BOT.user_id, is_bot: true }] },
  };
  const sockets = openSockets();
  for (const ws of sockets) ws.send(JSON.stringify(envelope));
  log("socket -> app_mention", envelopeId, "to", sockets.length);
  return { delivered: sockets.length, envelopeId };
}

// --- the server ----------------------------------------------------------------------------

const server = http.createServer((req, res) => {
  const chunks = [];
  let size = 0;
  req.on("data", (chunk) => {
    size += chunk.length;
    if (size <= BODY_LIMIT) chunks.push(chunk);
  });
  req.on("end", () => {
    const url = new URL(req.url, "http://127.0.0.1");
    const raw = Buffer.concat(chunks).toString("utf8");
    if (url.pathname === "/_requests" && req.method === "GET") return send(res, 200, calls);
    if (url.pathname === "/_state" && req.method === "GET") {
      return send(res, 200, { connections: openSockets().length, hellos, acks });
    }
    if (url.pathname === "/_mention" && req.method === "POST") {
      const body = parseBody("application/json", raw);
      if (typeof body.channel !== "string" || typeof body.text !== "string") {
        return send(res, 400, { error: "channel and text are required" });
      }
      const result = mention(body);
      return send(res, result.delivered ? 200 : 409, result);
    }
    if (!url.pathname.startsWith("/api/")) return send(res, 404, { ok: false, error: "not_found" });
    const method = url.pathname.slice("/api/".length);
    const params = { ...Object.fromEntries(url.searchParams), ...parseBody(req.headers["content-type"], raw) };
    const header = req.headers.authorization || "";
    const token = header.startsWith("Bearer ") ? header.slice(7).trim() : String(params.token || "");
    delete params.token;
    const kind = tokenKind(token);
    const call = { method, channel: typeof params.channel === "string" ? params.channel : null,
                   text: typeof params.text === "string" ? params.text : null, token: kind };
    calls.push(call);
    log("api", method, "token", kind, call.channel ? `channel ${call.channel}` : "");
    send(res, 200, webApi(method, params, kind));
  });
});

wss = new WebSocketServer({ server, path: "/link" });
wss.on("connection", (ws) => {
  log("socket connected");
  ws.on("message", (data) => {
    try {
      const message = JSON.parse(String(data));
      if (message && typeof message.envelope_id === "string") acks.push(message.envelope_id);
    } catch {
      // not an acknowledgement
    }
  });
  ws.on("close", () => log("socket closed"));
  ws.send(JSON.stringify({ type: "hello", num_connections: 1, connection_info: { app_id: BOT.app_id },
                           debug_info: { host: "fake-slack", approximate_connection_time: 3600 } }));
  hellos += 1;
});

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    for (const ws of wss.clients) ws.terminate();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  });
}

server.listen(port, "127.0.0.1", () => {
  port = server.address().port;
  console.log(`listening ${port}`);
});
