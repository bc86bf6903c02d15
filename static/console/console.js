// The console's only script besides htmx: toasts, modals, a select that submits its form.
// Everything that decides anything happens on the server; this file only moves focus and text.
(function () {
  "use strict";

  function toast(level, text) {
    var region = document.getElementById("toasts");
    if (!region) return;
    var item = document.createElement("div");
    item.className = "toast toast-" + (level || "info");
    item.textContent = text;
    region.appendChild(item);
    setTimeout(function () { item.remove(); }, 12000);
  }

  document.addEventListener("occ:toast", function (event) {
    var items = (event.detail && event.detail.messages) || [];
    items.forEach(function (m) {
      if (m && m.text) toast(m.level, m.text);
    });
  });

  // An error fragment of ours arrives retargeted into the toast region (HX-Retarget); it
  // leaves after a while like any toast.
  document.addEventListener("htmx:afterSwap", function (event) {
    var region = event.detail.target;
    if (region && region.id === "toasts" && region.lastElementChild) {
      var item = region.lastElementChild;
      setTimeout(function () { item.remove(); }, 12000);
    }
  });

  // What responseHandling (base.html) does not swap: an answer that is not ours (a proxy's
  // 502, the server error page). Whether the write happened is unknown.
  document.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    toast("error", "Outcome unknown. Refresh and check before trying again. Request ID: " +
      (xhr.getResponseHeader("X-Request-Id") || "unknown"));
  });

  document.addEventListener("htmx:sendError", function () {
    toast("error", "Request interrupted. The outcome is unknown: refresh and check before trying again.");
  });

  // A form with data-outcome-unknown-disables (Create Agent) whose own request was interrupted
  // or got an answer that is not ours (5xx): show its #outcome-unknown panel with a fresh
  // lookup, and disable the buttons that would send it again.
  function revealUnknownOutcome(event) {
    var form = event.detail.elt;
    if (!form || !form.hasAttribute || !form.hasAttribute("data-outcome-unknown-disables")) return;
    if (event.type === "htmx:responseError" && event.detail.xhr.status < 500) return;
    var panel = form.querySelector("#outcome-unknown");
    if (panel) {
      panel.hidden = false;
      var lookup = panel.querySelector("#outcome-lookup");
      if (lookup) lookup.replaceChildren();
    }
    form.querySelectorAll(form.getAttribute("data-outcome-unknown-disables")).forEach(function (button) {
      button.disabled = true;
    });
  }
  document.addEventListener("htmx:sendError", revealUnknownOutcome);
  document.addEventListener("htmx:responseError", revealUnknownOutcome);

  // Modals: a <dialog data-modal> swapped into the page opens itself, takes focus, and gives
  // focus back to whatever opened it when it closes.
  var opener = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-opens-modal")) opener = elt;
  });

  function openModals(root) {
    var dialogs = [];
    if (root.matches && root.matches("dialog[data-modal]")) dialogs.push(root);
    if (root.querySelectorAll) dialogs = dialogs.concat(Array.prototype.slice.call(root.querySelectorAll("dialog[data-modal]")));
    dialogs.forEach(function (dialog) {
      if (dialog.open) return;
      dialog.showModal();
      var first = dialog.querySelector("[autofocus], input:not([type=hidden]), select, textarea, button");
      if (first) first.focus();
      dialog.addEventListener("close", function () {
        dialog.remove();
        if (opener && document.body.contains(opener)) opener.focus();
      }, { once: true });
    });
  }

  // An error summary (components/error_summary.html) takes focus when it arrives, so the
  // person hears and sees what to fix; its links move focus to each field.
  function focusSummary(root) {
    var summary = root.matches && root.matches("[data-takes-focus]") ? root
      : root.querySelector && root.querySelector("[data-takes-focus]");
    if (summary) {
      summary.focus();
      summary.scrollIntoView({ block: "start" });
    }
  }

  document.addEventListener("click", function (event) {
    var link = event.target && event.target.closest && event.target.closest(".error-summary a[href^='#']");
    if (!link) return;
    var field = document.getElementById(link.getAttribute("href").slice(1));
    if (!field) return;
    event.preventDefault();
    var details = field.closest("details");
    if (details) details.open = true;
    field.focus();
    field.scrollIntoView({ block: "center" });
  });

  document.addEventListener("htmx:load", function (event) {
    openModals(event.detail.elt);
    focusSummary(event.detail.elt);
  });
  document.addEventListener("DOMContentLoaded", function () { focusSummary(document.body); });

  document.addEventListener("occ:close-modal", function () {
    document.querySelectorAll("dialog[data-modal][open]").forEach(function (d) { d.close(); });
  });

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (target && target.closest && target.closest("[data-close-modal]")) {
      var dialog = target.closest("dialog");
      if (dialog) dialog.close();
    }
  });

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target && target.hasAttribute && target.hasAttribute("data-submit-on-change") && target.form) {
      target.form.requestSubmit();
    }
  });
})();
