/* Copy buttons: <button data-copy-from="#element-id"> copies that element's text to the clipboard and
   says so on the button for a moment. Nothing is kept: the text stays only where the page has it. */
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var button = event.target && event.target.closest && event.target.closest("button[data-copy-from]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy-from"));
    if (!source || !navigator.clipboard) return;
    var label = button.lastChild;
    var text = label.textContent;
    navigator.clipboard.writeText(source.textContent.trim()).then(function () {
      label.textContent = button.getAttribute("data-copied-label") || "Copied";
      setTimeout(function () { label.textContent = text; }, 2000);
    }, function () {
      label.textContent = "Copy failed: select the key and copy it";
    });
  });
})();
