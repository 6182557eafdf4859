// The pool judging page (judging.js does the sending): keys 0, 1, 2 grade the document (the
// page's buttons name the grades), u takes back the last judgement.
(function () {
  "use strict";
  var judging = window.probrankJudging;
  judging.bindUndo();
  var form = judging.judgeForm("grade", {
    refused: "The server refused the judgement.",
    unreachable: "The server cannot be reached; your judgement was not saved. Press again.",
    fallback: null
  });
  if (!form) { return; }
  var grades = {};
  for (var i = 0; i < form.buttons.length; i++) { grades[form.buttons[i].value] = true; }
  document.addEventListener("keydown", function (event) {
    if (judging.plain(event) && grades[event.key]) {
      event.preventDefault();
      form.send(event.key);
    }
  });
})();
