/* Copy buttons: <button data-copy="#element-id"> copies that element's text to the clipboard and
   says so on the button for a moment. Nothing is kept: the text stays only where the page has it. */
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source || !navigator.clipboard) return;
    var label = button.textContent;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      button.textContent = button.getAttribute("data-copied-label") || "Copied";
      setTimeout(function () { button.textContent = label; }, 2000);
    }, function () {
      button.textContent = "Copy failed: select the key and copy it";
    });
  });
})();
