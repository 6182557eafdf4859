// The judging page of pairs (judging.js does the sending): keys left/1, right/2, down/0 (a
// tie), u (undo).
(function () {
  "use strict";
  var judging = window.probrankJudging;
  judging.bindUndo();
  var form = judging.judgeForm("choice", {
    refused: "The server refused the answer.",
    unreachable: "The server cannot be reached; your answer was not saved. Press again.",
    fallback: "tie"
  });
  if (!form) { return; }
  var KEYS = { ArrowLeft: "left", "1": "left", ArrowRight: "right", "2": "right",
               ArrowDown: "tie", "0": "tie" };
  document.addEventListener("keydown", function (event) {
    var choice = judging.plain(event) && KEYS[event.key];
    if (choice) {
      event.preventDefault();
      form.send(choice);
    }
  });
})();
