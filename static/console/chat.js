// The Agent page's Chat tab. The conversation lives here, in the page: each send posts every
// turn so far to OCC (the form's data-chat-url) and reads the reply as server-sent events
// (conversation, token…, done | error). OCC proxies to the gateway; this file never learns
// where the gateway is. "New conversation" swaps the tab afresh (htmx), which drops the turns.
(function () {
  "use strict";

  var states = new WeakMap(); // form -> {turns, conversationId, busy}

  function stateOf(form) {
    var state = states.get(form);
    if (!state) { state = { turns: [], conversationId: null, busy: false }; states.set(form, state); }
    return state;
  }

  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || ""; }
    catch (e) { return ""; }
  }

  function addTurn(log, role, text) {
    var empty = log.querySelector(".chat-empty");
    if (empty) empty.remove();
    var item = document.createElement("li");
    item.className = "chat-turn chat-" + role;
    var who = document.createElement("span");
    who.className = "chat-who";
    who.textContent = role === "user" ? "You" : "Agent";
    var body = document.createElement("span");
    body.className = "chat-text";
    body.textContent = text;
    item.appendChild(who);
    item.appendChild(body);
    log.appendChild(item);
    log.scrollTop = log.scrollHeight;
    return item;
  }

  function showError(section, text) {
    var box = section.querySelector("#chat-error");
    if (!box) return;
    box.textContent = text || "";
    box.hidden = !text;
  }

  // Server-sent events from a fetch body: blocks separated by a blank line, "event:" and "data:" lines.
  function parseBlock(block) {
    var name = "message", data = [];
    block.split("\n").forEach(function (line) {
      if (line.indexOf("event:") === 0) name = line.slice(6).trim();
      else if (line.indexOf("data:") === 0) data.push(line.slice(5).replace(/^ /, ""));
    });
    var payload = {};
    try { payload = data.length ? JSON.parse(data.join("\n")) : {}; } catch (e) { payload = {}; }
    return { name: name, data: payload };
  }

  async function send(form) {
    var section = form.closest("#agent-chat");
    var log = section.querySelector("#chat-log");
    var input = form.querySelector("textarea");
    var status = form.querySelector("#chat-status");
    var button = form.querySelector("button[type=submit]");
    var state = stateOf(form);
    var text = input.value.trim();
    if (state.busy) return;
    if (!text) { showError(section, "Write a message first."); input.focus(); return; }
    showError(section, "");
    state.busy = true;
    button.disabled = true;
    status.textContent = "Waiting for the Agent…";
    addTurn(log, "user", text);
    input.value = "";
    var turns = state.turns.concat([{ role: "user", content: text }]);
    var reply = addTurn(log, "assistant", "");
    reply.classList.add("streaming");
    var replyText = reply.querySelector(".chat-text");
    var answer = "", failed = null, finished = false;
    try {
      var response = await fetch(form.dataset.chatUrl, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "text/event-stream", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ conversationId: state.conversationId, messages: turns })
      });
      var type = response.headers.get("Content-Type") || "";
      if (!response.ok || type.indexOf("text/event-stream") !== 0) {
        var refusal = {};
        try { refusal = await response.json(); } catch (e) { refusal = {}; }
        failed = refusal.message || ("OCC could not send the message (HTTP " + response.status + ").");
      } else {
        var reader = response.body.getReader(), decoder = new TextDecoder(), buffer = "";
        while (!finished) {
          var chunk = await reader.read();
          if (chunk.done) break;
          buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, "\n");
          var cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            var event = parseBlock(buffer.slice(0, cut));
            buffer = buffer.slice(cut + 2);
            if (event.name === "conversation") state.conversationId = event.data.id || null;
            else if (event.name === "token") {
              answer += event.data.text || "";
              replyText.textContent = answer;
              status.textContent = "The Agent is answering…";
              log.scrollTop = log.scrollHeight;
            } else if (event.name === "error") { failed = event.data.message || "The conversation failed."; finished = true; }
            else if (event.name === "done") finished = true;
          }
        }
        if (!finished && !failed) failed = "The answer was cut off. Send again, or start a new conversation.";
      }
    } catch (e) {
      failed = "OCC could not be reached. Check your connection and send again.";
    }
    reply.classList.remove("streaming");
    if (failed) {
      if (!answer) reply.remove(); else reply.classList.add("failed");
      showError(section, failed);
      input.value = text; // nothing was answered: the message is kept to send again
    } else {
      state.turns = turns.concat([{ role: "assistant", content: answer }]);
    }
    status.textContent = failed ? "" : "Answered.";
    state.busy = false;
    button.disabled = false;
    input.focus();
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form || form.id !== "chat-form") return;
    event.preventDefault();
    send(form);
  });

  // Enter sends, Shift+Enter starts a new line.
  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || !input || input.id !== "chat-message") return;
    event.preventDefault();
    input.form.requestSubmit();
  });

  // A message being typed makes an old error go away.
  document.addEventListener("input", function (event) {
    if (event.target && event.target.id === "chat-message") {
      var section = event.target.closest("#agent-chat");
      if (section) showError(section, "");
    }
  });
})();
