// The Agent page's Runtime panel and Logs tab (no inline script: the CSP allows none).
// - Polls marked data-poll-visible are held while the browser tab is hidden: htmx's "every"
//   trigger still fires, the request is cancelled, so nothing is fetched nobody sees.
// - Pause holds the log's follow poller (the view and its cursor stay; Resume continues from it).
// - New log lines keep the list scrolled to the bottom when it was there before they came.
(function () {
  "use strict";

  function nearBottom(list) {
    return list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (!elt || !elt.hasAttribute) return;
    if (elt.hasAttribute("data-poll-visible") && document.visibilityState === "hidden") {
      event.preventDefault();
      return;
    }
    if (elt.hasAttribute("data-log-poller") && elt.closest("[data-log-view][data-paused]")) {
      event.preventDefault();
    }
  });

  var stick = new WeakMap();
  document.addEventListener("htmx:beforeSwap", function (event) {
    var elt = event.detail.elt;
    var list = elt && elt.closest ? elt.closest(".log-lines") : null;
    if (list) stick.set(list, nearBottom(list));
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    document.querySelectorAll(".log-lines").forEach(function (list) {
      if (stick.get(list) !== false) list.scrollTop = list.scrollHeight;
    });
  });

  function bottomAll() {
    document.querySelectorAll(".log-lines").forEach(function (list) { list.scrollTop = list.scrollHeight; });
  }
  document.addEventListener("DOMContentLoaded", bottomAll);
  document.addEventListener("htmx:load", function (event) {
    if (event.detail.elt && event.detail.elt.id === "agent-logs") bottomAll();
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-log-pause]") : null;
    if (!button) return;
    var view = button.closest("[data-log-view]");
    var status = view.querySelector("[data-log-status]");
    var paused = view.hasAttribute("data-paused");
    if (paused) {
      view.removeAttribute("data-paused");
      button.setAttribute("aria-pressed", "false");
      button.textContent = "Pause";
      if (status) status.textContent = "Following new lines.";
    } else {
      view.setAttribute("data-paused", "");
      button.setAttribute("aria-pressed", "true");
      button.textContent = "Resume";
      if (status) status.textContent = "Paused: new lines wait until you resume.";
    }
  });
})();
